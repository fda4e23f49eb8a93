"""Schemathesis hooks of the conformance run (tests/tests/openapi.rs).

`POST /api/brain/import` takes, and `GET /api/brain/export` answers,
`application/x-ndjson`: JSON lines. The document gives the lines as an array of export
records; Schemathesis has no (de)serializer for the media type, so the serializer
writes each item of the array as a line of JSON (and anything else the negative phase
generates as a single line), and the deserializer reads the lines back into an array,
which the response checks validate against the document.
"""

import json

import schemathesis


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx, value):
    if value is None:
        # The body is optional: `null` is no body, an empty import.
        return None
    if isinstance(value, list):
        lines = [json.dumps(item, ensure_ascii=False) for item in value]
        # An empty array is an empty import: one blank line, which the server skips
        # (an empty body would be sent as no body at all).
        text = "".join(line + "\n" for line in lines) or "\n"
    else:
        text = json.dumps(value, ensure_ascii=False) + "\n"
    return text.encode("utf-8")


@schemathesis.deserializer("application/x-ndjson")
def ndjson_lines(ctx, response):
    text = response.content.decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]
