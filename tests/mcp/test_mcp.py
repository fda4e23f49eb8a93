"""Engram's MCP server driven by the official Python SDK (`mcp` on PyPI), a client no one
here wrote. Run by tests/tests/mcp.rs against a real `engram serve`; every answer is
checked against the daemon's REST API.

The ways of connecting are the README's own snippets, read from README.md: the generic
`mcpServers` JSON and Codex's config.toml (stdio, relayed to the daemon), Claude Code's
`claude mcp add` lines (stdio, and streamable HTTP with the bearer token), and the
`--embedded` entry (stdio, the data directory opened in-process).

Environment (set by the Rust driver): ENGRAM_MCP_URL, ENGRAM_MCP_TOKEN, ENGRAM_MCP_DATA
(the daemon's data directory), ENGRAM_MCP_EMBEDDED_DATA (a data directory no daemon
holds), ENGRAM_MCP_README, and PATH with the `engram` binary first.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import tomllib
import unittest
import urllib.error
import urllib.request
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

URL = os.environ["ENGRAM_MCP_URL"]
TOKEN = os.environ["ENGRAM_MCP_TOKEN"]
DATA = os.environ["ENGRAM_MCP_DATA"]
EMBEDDED_DATA = os.environ["ENGRAM_MCP_EMBEDDED_DATA"]
README = os.environ["ENGRAM_MCP_README"]

TOOLS = {
    "memory_context",
    "memory_search",
    "memory_add",
    "memory_recent",
    "memory_update",
    "memory_forget",
    "conversation_forget",
    "conversation_log",
    "skills_list",
    "skill_read",
    "tool_authorize",
    "turn_end",
}
TIMEOUT = 60


# ---- the README's snippets ------------------------------------------------------------


def snippet(name: str) -> str:
    """The fenced block after `<!-- mcp-config: NAME -->` in the README."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    match = re.search(r"<!-- mcp-config: " + re.escape(name) + r" -->\s*```[a-z]*\n(.*?)```", text, re.S)
    if match is None:
        raise AssertionError(f"README.md has no `<!-- mcp-config: {name} -->` block")
    return match.group(1)


def from_json(name: str) -> tuple[str, list[str]]:
    server = json.loads(snippet(name))["mcpServers"]["engram"]
    return server["command"], server.get("args", [])


def from_codex() -> tuple[str, list[str]]:
    server = tomllib.loads(snippet("codex"))["mcp_servers"]["engram"]
    return server["command"], server.get("args", [])


def claude_line(name: str) -> list[str]:
    lines = [l for l in snippet(name).splitlines() if l.strip()]
    assert len(lines) == 1, lines
    return shlex.split(lines[0])


def from_claude_stdio() -> tuple[str, list[str]]:
    words = claude_line("claude-code-stdio")
    assert words[:3] == ["claude", "mcp", "add"], words
    command = words[words.index("--") + 1 :]
    return command[0], command[1:]


def from_claude_http() -> tuple[str, dict[str, str]]:
    """The URL and headers of Claude Code's HTTP line, for this test's daemon."""
    words = claude_line("claude-code-http")
    assert words[:3] == ["claude", "mcp", "add"] and "--transport" in words, words
    assert words[words.index("--transport") + 1] == "http", words
    url = next(w for w in words if w.startswith("http://"))
    header = words[words.index("--header") + 1]
    name, value = header.split(":", 1)
    # The README's daemon is on the default port and reads the token from the file.
    url = url.replace("http://127.0.0.1:7878", URL)
    value = re.sub(r"\$\(cat [^)]*auth-token\)", TOKEN, value.strip())
    return url, {name.strip(): value}


def stdio(command: str, args: list[str], data: str = DATA) -> StdioServerParameters:
    return StdioServerParameters(command=command, args=args, env={"ENGRAM_DATA_DIR": data, "ENGRAM_LOG": "warn"})


# ---- the REST API, as the reference -------------------------------------------------


def rest(method: str, path: str, body: Any = None, token: str | None = TOKEN, headers: dict | None = None):
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    request = urllib.request.Request(URL + path, data=data, method=method)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            raw = response.read()
            if response.headers.get_content_type() != "application/json":
                return response.status, raw.decode(errors="replace")
            return response.status, (json.loads(raw) if raw else None)
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw.decode(errors="replace")


def ok(method: str, path: str, body: Any = None):
    status, answer = rest(method, path, body)
    assert 200 <= status < 300, (method, path, status, answer)
    return answer


def person(method: str, path: str, body: Any = None):
    """`ok`, with the person's token (the daemon wrote it beside the agent's)."""
    with open(os.path.join(DATA, "operator-token"), encoding="utf-8") as f:
        token = f.read().strip()
    status, answer = rest(method, path, body, token=token)
    assert 200 <= status < 300, (method, path, status, answer)
    return answer


def active_skills() -> list[str]:
    return sorted(s["slug"] for s in ok("GET", "/api/skills")["items"] if s["active"])


# ---- helpers --------------------------------------------------------------------------


def same_values(a: Any, b: Any) -> bool:
    """Equal JSON, numbers compared as the f32 they are stored as (REST writes 0.8 as
    0.800000011920929 where serialising through a JSON value keeps 0.8)."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= 1e-6 * max(1.0, abs(a))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_values(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_values(x, y) for x, y in zip(a, b))
    return a == b


def structured(result: types.CallToolResult) -> dict:
    assert not result.is_error, result
    assert result.structured_content is not None, result
    # The text content carries the same JSON for clients that only read text.
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def failed(result: types.CallToolResult, code: str) -> dict:
    assert result.is_error, result
    problem = result.structured_content
    assert problem["code"] == code, problem
    assert result.content[0].text.startswith(f"{code}: "), result.content
    return problem


class Notifications:
    """Collects the server's notifications (handshake-era sessions)."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.event = asyncio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            method = getattr(message, "method", None) or getattr(getattr(message, "root", None), "method", None)
            self.methods.append(str(method))
            self.event.set()

    async def wait_for(self, method: str) -> None:
        deadline = time.monotonic() + 20
        while method not in self.methods:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no {method}; got {self.methods}"
            self.event.clear()
            try:
                await asyncio.wait_for(self.event.wait(), remaining)
            except asyncio.TimeoutError:
                pass


@asynccontextmanager
async def http_client(url: str, headers: dict[str, str], **kwargs):
    async with httpx2.AsyncClient(headers=headers, timeout=TIMEOUT) as http:
        async with Client(streamable_http_client(url, http_client=http), **kwargs) as client:
            yield client


# ---- the suite ------------------------------------------------------------------------


class Common:
    maxDiff = None

    """The checks every transport passes. `connect` opens a client."""

    def connect(self, **kwargs):
        raise NotImplementedError

    async def test_lists_tools_prompts_and_resources(self):
        async with self.connect() as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            self.assertEqual(set(tools), TOOLS)
            for tool in tools.values():
                self.assertTrue(tool.description and len(tool.description) > 40, tool.name)
                self.assertEqual(tool.input_schema["type"], "object", tool.name)
                self.assertFalse(tool.input_schema.get("additionalProperties", True), tool.name)
            self.assertTrue(tools["memory_forget"].annotations.destructive_hint)
            self.assertTrue(tools["memory_search"].annotations.read_only_hint)
            self.assertIn("user", tools["memory_add"].input_schema["properties"])
            self.assertIn("summary", tools["memory_add"].input_schema["properties"])

            skills = active_skills()
            self.assertTrue(skills)
            prompts = (await client.list_prompts()).prompts
            self.assertEqual(sorted(p.name for p in prompts), skills)
            resources = {str(r.uri) for r in (await client.list_resources()).resources}
            self.assertEqual(resources, {"memory://profile"} | {f"skill://{s}" for s in skills})

            slug = skills[0]
            body = ok("GET", f"/api/skills/{slug}?body=true")["body"]
            prompt = await client.get_prompt(slug)
            self.assertEqual(prompt.messages[0].content.text, body)
            read = await client.read_resource(f"skill://{slug}")
            self.assertEqual(read.contents[0].text, body)
            profile = await client.read_resource("memory://profile")
            self.assertIn("## Profile", profile.contents[0].text)
            with self.assertRaises(MCPError):
                await client.read_resource("skill://no-such-skill")

    async def test_memory_tools_agree_with_rest(self):
        async with self.connect() as client:
            tag = f"{self.name}{time.monotonic_ns()}"
            added = structured(
                await client.call_tool(
                    "memory_add",
                    {"type": "preference", "summary": f"Prefers green tea {tag}"},
                )
            )
            memory_id = added["id"]
            # What storing it did, beside the memory REST shows.
            self.assertEqual((added.pop("outcome"), added.pop("superseded")), ("added", []))
            via_rest = ok("GET", f"/api/brain/memory/{memory_id}")
            self.assertTrue(same_values(via_rest, added), (via_rest, added))

            found = structured(await client.call_tool("memory_search", {"q": f"green tea {tag}"}))
            via_rest = ok("GET", f"/api/brain/memory/search?q=green%20tea%20{tag}&limit=10")
            self.assertEqual([h["memory"]["id"] for h in found["items"]], [h["memory"]["id"] for h in via_rest["items"]])
            self.assertEqual(found["items"][0]["memory"]["id"], memory_id)

            recent = structured(await client.call_tool("memory_recent", {"limit": 5}))
            via_rest = ok("GET", "/api/brain/memory?limit=5")["items"]
            self.assertTrue(same_values(recent["items"], via_rest), (recent["items"], via_rest))

            # Another user's memory is theirs only.
            theirs = structured(
                await client.call_tool("memory_add", {"type": "project", "summary": f"Lives in Porto {tag}", "user": "alice"})
            )
            self.assertEqual(rest("GET", f"/api/brain/memory/{theirs['id']}")[0], 404)
            self.assertEqual(ok("GET", f"/api/brain/memory/{theirs['id']}?user=alice")["id"], theirs["id"])

            # The agent's delete is hidden at once and waits for the person, who can
            # restore it until the time it names.
            forgotten = structured(await client.call_tool("memory_forget", {"id": memory_id}))
            self.assertEqual(set(forgotten), {"deleted", "restorable_until"})
            self.assertEqual(forgotten["deleted"], memory_id)
            listed = ok("GET", "/api/brain/memory?limit=500")["items"]
            self.assertNotIn(memory_id, [m["id"] for m in listed])
            found = structured(await client.call_tool("memory_search", {"q": f"green tea {tag}"}))
            self.assertNotIn(memory_id, [h["memory"]["id"] for h in found["items"]])
            self.assertEqual(rest("GET", "/api/brain/dismissed")[1]["code"], "person-required")
            dismissed = person("GET", "/api/brain/dismissed?limit=500")["items"]
            waiting = next(d for d in dismissed if d["memory"]["id"] == memory_id)
            self.assertEqual(waiting["restorable_until"], forgotten["restorable_until"])
            failed(await client.call_tool("memory_forget", {"id": memory_id}), "not-found")
            restored = person("POST", f"/api/brain/memory/{memory_id}/restore")
            self.assertIsNone(restored["dismissed_at"])
            found = structured(await client.call_tool("memory_search", {"q": f"green tea {tag}"}))
            self.assertEqual(found["items"][0]["memory"]["id"], memory_id)
            # The person's delete is final at once (and the next transport starts clean).
            person("DELETE", f"/api/brain/memory/{memory_id}")
            self.assertEqual(rest("GET", f"/api/brain/memory/{memory_id}")[0], 404)

    async def test_what_is_true_now_and_forgetting_agree_with_rest(self):
        async with self.connect() as client:
            tag = f"{self.name}{time.monotonic_ns()}"
            user = "bob"
            old = structured(
                await client.call_tool(
                    "memory_add", {"type": "identity", "summary": "User's phone number is 555-0101", "user": user}
                )
            )
            # A new value of a single-valued attribute supersedes the live one.
            new = structured(
                await client.call_tool(
                    "memory_add", {"type": "identity", "summary": "User's phone number is 555-0202 now", "user": user}
                )
            )
            self.assertEqual((new["outcome"], new["superseded"]), ("added", [old["id"]]))
            self.assertEqual(ok("GET", f"/api/brain/memory/{old['id']}?user={user}")["superseded_by"], new["id"])
            # The same fact again reinforces it.
            again = structured(
                await client.call_tool(
                    "memory_add", {"type": "identity", "summary": "User's phone number is 555-0202 now", "user": user}
                )
            )
            self.assertEqual((again["outcome"], again["id"], again["reinforcements"]), ("reinforced", new["id"], 1))
            # An edit is settled the same way, through memory_update.
            city = structured(await client.call_tool("memory_add", {"type": "identity", "summary": "User lives in Austin", "user": user}))
            other = structured(
                await client.call_tool("memory_add", {"type": "preference", "summary": "User likes tacos", "user": user})
            )
            updated = structured(
                await client.call_tool("memory_update", {"id": other["id"], "summary": "User lives in Seattle now", "user": user})
            )
            self.assertEqual(updated["attribute"], "residence")
            self.assertEqual(ok("GET", f"/api/brain/memory/{city['id']}?user={user}")["superseded_by"], other["id"])
            failed(await client.call_tool("memory_update", {"id": "mem_nothing", "summary": "x", "user": user}), "not-found")
            # A secret alone is refused with REST's code.
            refused = await client.call_tool("memory_add", {"type": "identity", "summary": "User's password is Hunter2!x", "user": user})
            failed(refused, "secret-refused")
            status, problem = rest("POST", f"/api/brain/memory?user={user}", {"type": "identity", "summary": "User's password is Hunter2!x"})
            self.assertEqual((status, problem["code"]), (422, "secret-refused"))
            # A conversation forgotten is gone; forgetting it again is not found, as in REST.
            conversation = f"conv-{tag}"
            structured(
                await client.call_tool(
                    "conversation_log",
                    {"conversation_id": conversation, "messages": [{"role": "user", "content": "I grew up in Savannah."}], "user": user},
                )
            )
            dropped = structured(await client.call_tool("conversation_forget", {"conversation_id": conversation, "user": user}))
            self.assertEqual(dropped, {"conversation_id": conversation, "messages_deleted": 1})
            failed(await client.call_tool("conversation_forget", {"conversation_id": conversation, "user": user}), "not-found")
            self.assertEqual(rest("DELETE", f"/api/brain/conversations/{conversation}?user={user}")[0], 404)

    async def test_a_turn_from_context_to_end(self):
        async with self.connect() as client:
            tag = f"{self.name}{time.monotonic_ns()}"
            structured(await client.call_tool("memory_add", {"type": "project", "summary": f"Works on the kiln {tag} project"}))
            conversation = f"conv-{tag}"
            opened = structured(
                await client.call_tool(
                    "memory_context",
                    {"message": f"/word-stats how is the kiln {tag} project going?", "conversation_id": conversation},
                )
            )
            turn_id = opened["turn_id"]
            self.assertTrue(turn_id.startswith("turn_"))
            self.assertIn(f"kiln {tag}", opened["memory_block"])
            self.assertEqual(opened["invoked"]["slug"], "word-stats")
            self.assertTrue(opened["invoked"]["body"])
            self.assertIsNotNone(opened["message_id"])
            view = ok("GET", f"/api/turns/{turn_id}")
            self.assertEqual(view["turn"]["channel"], "mcp")
            self.assertEqual(view["turn"]["user"], "default")
            self.assertEqual(view["turn"]["conversation_id"], conversation)
            self.assertEqual(view["state"], "open")
            grants = {g["tool"]: g["decision"] for g in opened["grants"]}
            self.assertEqual(grants, {g["tool"]: g["decision"] for g in opened["grants"]})

            decision = structured(await client.call_tool("tool_authorize", {"turn_id": turn_id, "tool": "send_message"}))
            audit = ok("GET", f"/api/audit?turn={turn_id}")["items"]
            self.assertEqual(audit[0]["caller"], "mcp")
            self.assertEqual(audit[0]["tool"], "send_message")
            self.assertEqual(audit[0]["decision"], decision["decision"])
            self.assertEqual(audit[0]["code"], decision["code"])

            ended = structured(await client.call_tool("turn_end", {"turn_id": turn_id, "reply": "Going well."}))
            self.assertEqual(ended["state"], "ended")
            self.assertIsNotNone(ended["reply_id"])
            self.assertEqual(ok("GET", f"/api/turns/{turn_id}")["state"], "ended")
            # Its grants are gone: the gate now denies with `turn-ended`.
            again = structured(await client.call_tool("tool_authorize", {"turn_id": turn_id, "tool": "send_message"}))
            self.assertEqual((again["decision"], again["code"]), ("deny", "turn-ended"))
            failed(await client.call_tool("turn_end", {"turn_id": turn_id}), "turn-ended")

    async def test_a_turn_is_its_users_own(self):
        async with self.connect() as client:
            opened = structured(await client.call_tool("memory_context", {"message": "what should I cook tonight?", "user": "alice"}))
            turn_id = opened["turn_id"]
            self.assertEqual(ok("GET", f"/api/turns/{turn_id}?user=alice")["turn"]["user"], "alice")
            # To the session's user (default), alice's turn is no turn at all.
            other = structured(await client.call_tool("tool_authorize", {"turn_id": turn_id, "tool": "send_message"}))
            self.assertEqual((other["decision"], other["code"]), ("deny", "unknown-turn"))
            failed(await client.call_tool("turn_end", {"turn_id": turn_id}), "unknown-turn")
            # Named, it is hers: decided, audited under her as the MCP client's, ended.
            mine = structured(await client.call_tool("tool_authorize", {"turn_id": turn_id, "tool": "send_message", "user": "alice"}))
            self.assertNotEqual(mine["code"], "unknown-turn")
            audit = ok("GET", f"/api/audit?turn={turn_id}&user=alice")["items"]
            self.assertEqual([(a["caller"], a["code"]) for a in audit], [("mcp", mine["code"])])
            ended = structured(await client.call_tool("turn_end", {"turn_id": turn_id, "user": "alice"}))
            self.assertEqual(ended["state"], "ended")

    async def test_a_refused_turn_is_refused_as_rest_refuses_it(self):
        # Another user's conversation, a conversation id over the limit, a blank message:
        # the same status, code, field and detail as POST /api/turns.
        bobs = f"bobs-{self.name}{time.monotonic_ns()}"
        ok("POST", "/api/turns", {"message": "hello", "conversation_id": bobs, "user": "bob"})
        async with self.connect() as client:
            for args, code, field in [
                ({"conversation_id": bobs}, "owned-by-another-user", None),
                ({"conversation_id": "x" * 129}, "invalid-field", "conversation_id"),
                ({"message": " \n"}, "invalid-field", "message"),
            ]:
                call = {"message": "what do I like?", "user": "alice", **args}
                status, expected = rest("POST", "/api/turns", call)
                self.assertEqual((expected["code"], expected.get("field")), (code, field), expected)
                problem = failed(await client.call_tool("memory_context", call), code)
                self.assertEqual(
                    (problem["status"], problem.get("field"), problem["detail"]),
                    (status, field, expected["detail"]),
                )

    async def test_conversation_log_teaches_the_second_brain(self):
        async with self.connect() as client:
            tag = f"{self.name}{time.monotonic_ns()}"
            conversation = f"log-{tag}"
            logged = structured(
                await client.call_tool(
                    "conversation_log",
                    {
                        "conversation_id": conversation,
                        "messages": [
                            {"role": "user", "content": "I live in Lisbon and I love surfing."},
                            {"role": "assistant", "content": "Nice, Lisbon has great waves."},
                        ],
                        "end": True,
                    },
                )
            )
            self.assertEqual(len(logged["recorded"]), 2)
            self.assertEqual(logged["ended"]["conversation_id"], conversation)
            self.assertGreater(logged["ended"]["candidates"], 0, logged)
            hits = ok("GET", "/api/brain/memory/search?q=Lisbon")["items"]
            self.assertTrue(any("Lisbon" in h["memory"]["summary"] for h in hits), hits)
            # A bad message records nothing of the call.
            bad = failed(
                await client.call_tool(
                    "conversation_log",
                    {"conversation_id": f"bad-{tag}", "messages": [{"role": "user", "content": "ok"}, {"role": "robot", "content": "x"}]},
                ),
                "invalid-field",
            )
            self.assertEqual(bad["field"], "messages[1].role")

    async def test_skills_list_and_read(self):
        async with self.connect() as client:
            listed = structured(await client.call_tool("skills_list", {}))
            self.assertEqual([s["slug"] for s in listed["items"]], active_skills())
            read = structured(await client.call_tool("skill_read", {"slug": "word-stats"}))
            self.assertEqual(read["body"], ok("GET", "/api/skills/word-stats?body=true")["body"])
            detail = ok("GET", "/api/skills/word-stats")
            self.assertEqual(sorted(read["files"]), sorted(detail["scripts"] + detail["references"]))
            reference = next(f for f in read["files"] if f.startswith("references/"))
            file = structured(await client.call_tool("skill_read", {"slug": "word-stats", "path": reference}))["file"]
            with open(os.path.join(DATA, "skills", "word-stats", reference), encoding="utf-8") as f:
                self.assertEqual(file["text"], f.read())
            failed(await client.call_tool("skill_read", {"slug": "word-stats", "path": "../../auth-token"}), "invalid-field")
            failed(await client.call_tool("skill_read", {"slug": "no-such-skill"}), "not-found")

    async def test_bad_calls_are_tool_errors_and_the_session_goes_on(self):
        async with self.connect() as client:
            with self.assertRaises(MCPError) as unknown:
                await client.call_tool("no_such_tool", {})
            self.assertIn("unknown tool", str(unknown.exception))
            problem = failed(await client.call_tool("memory_add", {"type": "preference", "summary": 5}), "invalid-field")
            self.assertEqual(problem["field"], "summary")
            problem = failed(await client.call_tool("memory_search", {"q": "tea", "colour": "red"}), "unknown-field")
            self.assertEqual(problem["field"], "colour")
            failed(await client.call_tool("memory_search", {"q": "tea", "limit": 0}), "invalid-field")
            failed(await client.call_tool("memory_context", {}), "invalid-field")
            failed(await client.call_tool("memory_recent", {"user": ""}), "invalid-field")
            failed(await client.call_tool("skills_list", {"user": "alice"}), "unknown-field")
            # Oversized: a message over the 64 KiB limit of a turn's message.
            problem = failed(await client.call_tool("memory_context", {"message": "x" * (70 * 1024)}), "invalid-field")
            self.assertEqual(problem["field"], "message")
            failed(await client.call_tool("tool_authorize", {"turn_id": "turn_nope", "tool": "x" * 200}), "invalid-field")
            decision = structured(await client.call_tool("tool_authorize", {"turn_id": "turn_nope", "tool": "cd"}))
            self.assertEqual(decision["code"], "unknown-turn")
            # Still serving.
            self.assertEqual(len((await client.list_tools()).tools), len(TOOLS))

    async def test_list_changed_when_skills_change(self):
        notes = Notifications()
        async with self.connect(message_handler=notes) as client:
            slug = "tweet-notifier"
            self.assertIn(slug, [p.name for p in (await client.list_prompts()).prompts])
            if client.protocol_version >= "2026-07-28":
                async with client.listen(prompts_list_changed=True, resources_list_changed=True) as subscription:
                    ok("POST", f"/api/skills/{slug}/deactivate")
                    try:
                        event = await asyncio.wait_for(subscription.__anext__(), 20)
                    finally:
                        ok("POST", f"/api/skills/{slug}/activate")
                    self.assertIsNotNone(event)
            else:
                ok("POST", f"/api/skills/{slug}/deactivate")
                try:
                    await notes.wait_for("notifications/resources/list_changed")
                    await notes.wait_for("notifications/prompts/list_changed")
                    names = [p.name for p in (await client.list_prompts(cache_mode="refresh")).prompts]
                    self.assertNotIn(slug, names)
                finally:
                    ok("POST", f"/api/skills/{slug}/activate")


class StdioRelay(Common, unittest.IsolatedAsyncioTestCase):
    """`engram mcp` from the generic mcpServers JSON, relaying to the daemon."""

    name = "stdio"

    def connect(self, **kwargs):
        return Client(stdio(*from_json("generic")), read_timeout_seconds=TIMEOUT, **kwargs)

    async def test_the_other_stdio_snippets_start_the_same_server(self):
        for command, args in (from_codex(), from_claude_stdio()):
            self.assertEqual((command, args), from_json("generic"))
        async with Client(stdio(*from_claude_stdio()), mode="legacy") as client:
            self.assertEqual(len((await client.list_tools()).tools), len(TOOLS))

    async def test_an_oversized_message_is_an_error_for_its_call(self):
        async with self.connect() as client:
            with self.assertRaises(MCPError) as raised:
                await client.call_tool("memory_add", {"type": "project", "summary": "x" * (2 * 1024 * 1024)})
            self.assertIn("1 MiB", str(raised.exception))
            self.assertEqual(len((await client.list_tools()).tools), len(TOOLS))


class StdioRelayLegacy(StdioRelay):
    """The same, with the initialize handshake of the protocol versions up to 2025-11-25."""

    name = "stdiolegacy"

    def connect(self, **kwargs):
        return Client(stdio(*from_json("generic")), mode="legacy", read_timeout_seconds=TIMEOUT, **kwargs)


class StreamableHttp(Common, unittest.IsolatedAsyncioTestCase):
    """`/mcp` on the daemon, as Claude Code's HTTP line configures it."""

    name = "http"

    def connect(self, **kwargs):
        url, headers = from_claude_http()
        return http_client(url, headers, read_timeout_seconds=TIMEOUT, **kwargs)

    async def test_no_token_no_entry(self):
        url, _ = from_claude_http()
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        }
        accept = {"Accept": "application/json, text/event-stream"}
        status, problem = rest("POST", "/mcp", initialize, token=None, headers=accept)
        self.assertEqual(status, 401)
        self.assertEqual(problem["code"], "unauthorized")
        status, _ = rest("POST", "/mcp", initialize, token="wrong-token-0123456789", headers=accept)
        self.assertEqual(status, 401)
        # DNS rebinding: a page elsewhere (even with the token) is refused by Origin...
        status, _ = rest("POST", "/mcp", initialize, headers={**accept, "Origin": "http://evil.example"})
        self.assertEqual(status, 403)
        # ...and a request for another host name by Host.
        status, _ = rest("POST", "/mcp", initialize, headers={**accept, "Host": "evil.example"})
        self.assertEqual(status, 403)
        status, _ = rest("POST", "/mcp", initialize, headers={**accept, "Origin": URL})
        self.assertEqual(status, 200)
        # A body over 1 MiB is refused before it is read whole.
        status, _ = rest("POST", "/mcp", b"{" + b" " * (2 * 1024 * 1024) + b"}", headers=accept)
        self.assertEqual(status, 413)
        # Without the token the Python client fails to connect, and says why.
        with self.assertRaises(Exception):
            async with http_client(url, {}, read_timeout_seconds=10) as client:
                await client.list_tools()

    async def test_a_session_that_disconnects_mid_call(self):
        url, headers = from_claude_http()
        host, port = URL.removeprefix("http://").split(":")
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {
                    "name": "conversation_log",
                    "arguments": {
                        "conversation_id": "cut-off",
                        "messages": [{"role": "user", "content": f"message {i}"} for i in range(100)],
                        "end": True,
                    },
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {},
                        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                    },
                },
            }
        ).encode()
        for _ in range(5):
            with socket.create_connection((host, int(port))) as sock:
                sock.sendall(
                    (
                        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: {headers['Authorization']}\r\n"
                        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                        f"MCP-Protocol-Version: 2026-07-28\r\nContent-Length: {len(body)}\r\n\r\n"
                    ).encode()
                    + body
                )
            # Closed before any answer. The daemon goes on serving everyone else.
        async with self.connect() as client:
            self.assertEqual(len((await client.list_tools()).tools), len(TOOLS))
        self.assertEqual(rest("GET", "/healthz", token=None)[0], 200)


class StreamableHttpLegacy(StreamableHttp):
    """The same with a handshake-era session (`Mcp-Session-Id`)."""

    name = "httplegacy"

    def connect(self, **kwargs):
        url, headers = from_claude_http()
        return http_client(url, headers, mode="legacy", read_timeout_seconds=TIMEOUT, **kwargs)

    async def test_ending_the_session_is_acknowledged(self):
        # The client ends its session with DELETE /mcp on the way out, and logs a
        # warning unless the answer is 200 or 204.
        with self.assertNoLogs("mcp", level="WARNING"):
            async with self.connect() as client:
                await client.list_tools()


class StdioDisconnects(unittest.IsolatedAsyncioTestCase):
    """A stdio client that goes away mid-call: the relay ends, the daemon does not."""

    def test_closing_stdin_mid_call_ends_the_relay_cleanly(self):
        command, args = from_json("generic")
        for kill in (False, True):
            process = subprocess.Popen(
                [command, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env={**os.environ, "ENGRAM_DATA_DIR": DATA, "ENGRAM_LOG": "warn"},
            )
            messages = [
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_context", "arguments": {"message": "what do I like?"}}},
            ]
            process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
            process.stdin.flush()
            if kill:
                process.kill()
            else:
                process.stdin.close()
            code = process.wait(timeout=TIMEOUT)
            if not kill:
                self.assertEqual(code, 0)
            process.stdout.close()
        self.assertEqual(rest("GET", "/healthz", token=None)[0], 200)


class Embedded(unittest.IsolatedAsyncioTestCase):
    """`engram mcp --embedded`: the data directory opened in-process, no daemon."""

    def connect(self, **kwargs):
        return Client(stdio(*from_json("embedded"), data=EMBEDDED_DATA), read_timeout_seconds=TIMEOUT, **kwargs)

    async def test_serves_the_tools_from_its_own_data_directory(self):
        command, args = from_json("embedded")
        self.assertEqual(args, ["mcp", "--embedded"])
        async with self.connect() as client:
            self.assertEqual({t.name for t in (await client.list_tools()).tools}, TOOLS)
            added = structured(await client.call_tool("memory_add", {"type": "project", "summary": "Has a cat named Miso"}))
            found = structured(await client.call_tool("memory_search", {"q": "cat Miso"}))
            self.assertEqual(found["items"][0]["memory"]["id"], added["id"])
            opened = structured(await client.call_tool("memory_context", {"message": "what is my cat called?"}))
            self.assertIn("Miso", opened["memory_block"])
            structured(await client.call_tool("turn_end", {"turn_id": opened["turn_id"]}))
            self.assertIn("word-stats", [p.name for p in (await client.list_prompts()).prompts])
        # The daemon's data directory is another: nothing of this reached it.
        self.assertFalse(ok("GET", "/api/brain/memory/search?q=Miso")["items"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
