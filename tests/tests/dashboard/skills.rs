//! /skills against a local registry server (`engram registry serve` over the
//! repository's mirror): install from a registry id with its toasts, the already-installed refusal,
//! the active switch, delete through the trash icon and its confirmation, install from
//! the URL of a raw SKILL.md, the refresh icon's discovery scan, and the registry link.
//! Each step is checked against what the daemon then reports.

use std::path::Path;

use engram_e2e::{Daemon, Listening, fixtures, ok};
use serde_json::Value;

use crate::browser::{Browser, WIDTHS};

const ID: &str = "ai-ml/agent-audit-logging";
const SLUG: &str = "agent-audit-logging";

/// The listing entry of `slug`, if installed.
fn listed(daemon: &Daemon, slug: &str) -> Option<Value> {
    let list = ok(daemon.get("/api/skills"), 200);
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|s| s["slug"] == slug)
        .cloned()
}

/// The `detail` of a problem document answered with `status`.
fn ok_problem(response: engram_e2e::Response, status: u16) -> String {
    assert_eq!(response.status, status, "{}", response.text());
    response.json()["detail"]
        .as_str()
        .expect("a detail")
        .to_string()
}

fn card(slug: &str) -> String {
    format!("ul.skills li.skill[data-slug='{slug}']")
}

/// Records the text of every toast from now on into `window.toastLog`, so that a
/// toast that came and went between two polls is still seen.
async fn record_toasts(browser: &Browser) {
    browser
        .client
        .execute(
            "window.toastLog = [];\
             new MutationObserver(records => {\
               for (const r of records) for (const n of r.addedNodes)\
                 if (n.classList && n.classList.contains('toast'))\
                   window.toastLog.push(n.className + ' | ' + n.querySelector('span').textContent);\
             }).observe(document.getElementById('toasts'), { childList: true });",
            vec![],
        )
        .await
        .expect("observe the toasts");
}

/// Waits for a recorded toast containing every one of `parts`; returns its text.
async fn wait_for_toast(browser: &Browser, parts: &[&str]) -> String {
    let wanted = serde_json::to_string(parts).expect("json");
    browser
        .wait_until(
            &format!("a toast with {parts:?}"),
            &format!(
                "const parts = {wanted};\
                 return window.toastLog.some(t => parts.every(p => t.includes(p)));"
            ),
        )
        .await;
    let log = browser
        .client
        .execute("return window.toastLog", vec![])
        .await
        .expect("toast log");
    log.as_array()
        .expect("array")
        .iter()
        .filter_map(Value::as_str)
        .find(|t| parts.iter().all(|p| t.contains(p)))
        .expect("the toast")
        .to_string()
}

fn write_skill(dir: &Path, frontmatter: &str) {
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::write(dir.join("SKILL.md"), frontmatter).expect("write SKILL.md");
}

/// Serves `body` as the answer to every request, from a thread on loopback, for the
/// life of the test process; the URL of a file on it.
fn serve_file(body: &'static [u8]) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!(
        "http://{}/fetcher/SKILL.md",
        listener.local_addr().expect("addr")
    );
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut head = [0u8; 4096];
            let _ = stream.read(&mut head);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/markdown\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(body);
        }
    });
    url
}

#[tokio::test]
#[cfg_attr(
    not(browser),
    ignore = "needs chromium and chromedriver (tests/build.rs looks for them)"
)]
async fn install_toggle_delete_rescan_and_browse_skills() {
    let registry = Listening::registry(&fixtures().join("registry-mirror"));
    let registry_url = registry.url();
    // The registry is on loopback, which URL installs refuse unless allowed.
    let config = format!("skills:\n  registry: {registry_url}\nnetwork:\n  allowPrivate: true\n");
    let browser = Browser::start("skills_page", |data| {
        std::fs::write(data.join("config.yaml"), &config).expect("config.yaml");
    })
    .await;
    let daemon = &browser.daemon;

    browser.open("/skills").await;
    browser.wait_for("ul.skills li.skill").await;
    browser
        .wait_for_text("p.list-summary", "4 skills installed")
        .await;

    // The registry links: on the page and in the header, both to a new tab.
    for link in ["a.registry-browse", "#registry-link"] {
        let element = browser.wait_for(link).await;
        assert_eq!(
            element.attr("href").await.expect("href").as_deref(),
            Some(registry_url.as_str()),
            "{link}"
        );
        assert_eq!(
            element.attr("target").await.expect("target").as_deref(),
            Some("_blank"),
            "{link}"
        );
        let rel = element.attr("rel").await.expect("rel").unwrap_or_default();
        assert!(rel.split(' ').any(|r| r == "noopener"), "{link}: rel={rel}");
    }
    browser
        .wait_for_text("a.registry-browse", "Browse the registry")
        .await;

    // Install from the registry id: a toast while it runs, then the status.
    record_toasts(&browser).await;
    browser.fill("#install-registry-id", ID).await;
    browser
        .click("#install-registry-id-form button[type=submit]")
        .await;
    browser.wait_for(&card(SLUG)).await;
    wait_for_toast(&browser, &[&format!("Installing {ID}…")]).await;
    wait_for_toast(&browser, &["toast-ok", &format!("Installed {ID} 1.0.0")]).await;
    let skill = listed(daemon, SLUG).expect("installed");
    assert_eq!(skill["id"], ID);
    assert_eq!(skill["active"], true);
    assert_eq!(skill["source"]["kind"], "registry");
    browser
        .wait_for_text(&format!("{} .skill-name", card(SLUG)), SLUG)
        .await;
    browser
        .wait_for_text(
            &format!("{} .skill-description", card(SLUG)),
            "audit logging",
        )
        .await;
    browser
        .wait_for_text(&format!("{} .skill-meta", card(SLUG)), "compliance")
        .await;
    browser
        .wait_for_text(&format!("{} .badge-source", card(SLUG)), "registry")
        .await;
    browser
        .wait_for_text("p.list-summary", "5 skills installed")
        .await;

    // Again: refused as installed already (409), with where to find "force".
    browser.fill("#install-registry-id", ID).await;
    browser
        .click("#install-registry-id-form button[type=submit]")
        .await;
    let refused = wait_for_toast(&browser, &["toast-error", "installed already"]).await;
    assert!(refused.contains("force"), "{refused}");
    browser
        .wait_for_text("#install-registry-id-form p.error", "installed already")
        .await;
    // A skill the registry does not have: the server's reason, as it gave it.
    browser
        .fill("#install-registry-id", "ai-ml/no-such-skill")
        .await;
    browser
        .click("#install-registry-id-form button[type=submit]")
        .await;
    let missing = wait_for_toast(&browser, &["toast-error", "Could not install: no skill"]).await;
    // The reason names the id: the toast says it once.
    assert_eq!(
        missing.matches("ai-ml/no-such-skill").count(),
        1,
        "{missing}"
    );
    let detail = ok_problem(
        daemon.call(
            "POST",
            "/api/skills/install-from-registry",
            &serde_json::json!({ "id": "ai-ml/no-such-skill" }).to_string(),
        ),
        404,
    );
    assert!(missing.contains(&detail), "{missing} lacks {detail}");
    browser
        .wait_for_text("#install-registry-id-form p.error", &detail)
        .await;
    let errors = browser.console_errors().await;
    assert!(
        errors
            .iter()
            .all(|e| e.contains("409") || e.contains("404")),
        "unexpected console errors: {errors:#?}"
    );
    // With force it is reinstalled.
    browser.fill("#install-registry-id", ID).await;
    browser.click("#install-registry-id-force").await;
    browser
        .click("#install-registry-id-form button[type=submit]")
        .await;
    wait_for_toast(&browser, &["toast-ok", "Reinstalled", ID]).await;

    // The active switch, labelled with the skill's name.
    let switch = format!("{} input.switch[role=switch]", card(SLUG));
    let label: Value = browser
        .client
        .execute(
            &format!("return document.querySelector(\"{switch}\").labels[0].textContent"),
            vec![],
        )
        .await
        .expect("label");
    assert!(
        label.as_str().is_some_and(|l| l.contains(SLUG)),
        "switch label: {label}"
    );
    browser.click(&switch).await;
    browser
        .wait_until(
            "the deactivated card",
            &format!(
                "const c = document.querySelector(\"{}\");\
                 return c.classList.contains('inactive') && !c.querySelector('input.switch').checked \
                   && !c.querySelector('input.switch').disabled;",
                card(SLUG)
            ),
        )
        .await;
    assert_eq!(listed(daemon, SLUG).expect("listed")["active"], false);
    browser.wait_for_text("p.list-summary", "1 inactive").await;
    browser.click(&switch).await;
    browser
        .wait_until(
            "the activated card",
            &format!(
                "const c = document.querySelector(\"{}\");\
                 return !c.classList.contains('inactive') && c.querySelector('input.switch').checked;",
                card(SLUG)
            ),
        )
        .await;
    assert_eq!(listed(daemon, SLUG).expect("listed")["active"], true);

    // Delete by the trash icon: cancelling keeps it, confirming removes it.
    let trash = format!("{} button.delete[aria-label='Delete {SLUG}']", card(SLUG));
    browser.click(&trash).await;
    browser.click("dialog.confirm button[value=cancel]").await;
    assert!(listed(daemon, SLUG).is_some());
    browser.click(&trash).await;
    browser.click("dialog.confirm button[value=confirm]").await;
    browser
        .wait_until(
            "the card to go",
            &format!("return !document.querySelector(\"{}\")", card(SLUG)),
        )
        .await;
    wait_for_toast(&browser, &["Deleted", SLUG]).await;
    assert!(listed(daemon, SLUG).is_none());
    assert!(!browser.data.path().join("skills").join(ID).exists());

    // Install from the URL of a raw SKILL.md the registry server serves.
    let raw = format!("{registry_url}/categories/development/clean-code/SKILL.md");
    assert_eq!(
        registry
            .get("/categories/development/clean-code/SKILL.md")
            .status,
        200
    );
    browser.fill("#install-url", &raw).await;
    browser.click("#install-url-form button[type=submit]").await;
    browser.wait_for(&card("clean-code")).await;
    wait_for_toast(&browser, &[&format!("Installing {raw}…")]).await;
    wait_for_toast(&browser, &["toast-ok", "Installed clean-code"]).await;
    let skill = listed(daemon, "clean-code").expect("installed from the URL");
    assert_eq!(skill["source"]["kind"], "url");
    browser
        .wait_for_text(&format!("{} .badge-source", card("clean-code")), "URL")
        .await;

    // A skill that asks for tools: the dialog names them; cancelling installs nothing,
    // granting installs it, and the toast says what it may use.
    let fetcher = serve_file(
        b"---\nname: fetcher\ndescription: Fetches pages. Use it to read a URL.\nversion: 1.0.0\nallowed-tools: fetch_url\n---\n# Fetcher\n",
    );
    for grant in [false, true] {
        browser.fill("#install-url", &fetcher).await;
        browser.click("#install-url-form button[type=submit]").await;
        browser.wait_for_text("dialog.confirm", "fetch_url").await;
        let answer = if grant { "confirm" } else { "cancel" };
        browser
            .click(&format!("dialog.confirm button[value={answer}]"))
            .await;
        if grant {
            wait_for_toast(&browser, &["toast-ok", "Installed fetcher", "fetch_url"]).await;
        } else {
            wait_for_toast(&browser, &["toast-error", "nothing was installed"]).await;
            assert!(listed(daemon, "fetcher").is_none());
        }
    }
    let skill = listed(daemon, "fetcher").expect("installed once granted");
    assert_eq!(skill["allowed_tools"], serde_json::json!(["fetch_url"]));
    // The two first answers were the deliberate 409 `tools-unconfirmed`.
    let errors = browser.console_errors().await;
    assert!(
        errors.len() == 2 && errors.iter().all(|e| e.contains("409")),
        "unexpected console errors: {errors:#?}"
    );

    // The refresh icon: a scan picks up a directory written by hand (and reports one
    // that is not a valid skill).
    let skills = browser.data.path().join("skills");
    write_skill(
        &skills.join("hand-made"),
        "---\nname: hand-made\ndescription: Written into the skills directory by hand.\nversion: 0.1.0\n---\n# Hand-made\n",
    );
    // (A file without frontmatter loads leniently; one never closed does not.)
    write_skill(&skills.join("not-a-skill"), "---\nnever closed\n");
    assert!(listed(daemon, "hand-made").is_none());
    browser
        .click("button[aria-label='Rescan skills directory']")
        .await;
    let report = wait_for_toast(&browser, &["Scan done", "added hand-made"]).await;
    assert!(report.contains("not-a-skill"), "{report}");
    browser.wait_for(&card("hand-made")).await;
    browser
        .wait_for_text(&format!("{} .badge-source", card("hand-made")), "manual")
        .await;
    browser
        .wait_for_text(".skill-notices .problems", "not-a-skill")
        .await;
    let skill = listed(daemon, "hand-made").expect("found by the scan");
    assert_eq!(skill["source"]["kind"], "manual");
    assert_eq!(skill["active"], true);
    // A second scan finds nothing new.
    browser
        .click("button[aria-label='Rescan skills directory']")
        .await;
    wait_for_toast(&browser, &["Scan done", "not valid"]).await;

    browser
        .client
        .execute(
            "document.querySelectorAll('.toast').forEach(t => t.remove())",
            vec![],
        )
        .await
        .expect("dismiss the toasts");
    for width in WIDTHS {
        browser.set_width(width).await;
        browser
            .assert_fits_and_screenshot(&format!("skills-after-scan-{width}"))
            .await;
        browser
            .client
            .execute(
                "document.querySelector('ul.skills').scrollIntoView()",
                vec![],
            )
            .await
            .expect("scroll to the list");
        browser
            .assert_fits_and_screenshot(&format!("skills-list-{width}"))
            .await;
        browser
            .client
            .execute("window.scrollTo(0, 0)", vec![])
            .await
            .expect("scroll back");
    }

    // The only console errors were the deliberate 409s, read above.
    browser.assert_no_console_errors("skills page").await;
    browser.close().await;
    registry.stop();
}
