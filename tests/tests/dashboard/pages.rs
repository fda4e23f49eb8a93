//! Every page loads, logged in, with no console error, at 1280 and 390 px; the
//! screenshots of each land in target/screenshots/<page>-<width>.png.

use engram_e2e::ok;
use serde_json::json;

use crate::brain_data::{add, end, say};
use crate::browser::{Browser, WIDTHS};

/// The pages, each with an element that shows it has drawn its content.
const PAGES: &[(&str, &str, &str)] = &[
    ("memory", "/second-brain/memory", "ul.memories li.memory"),
    ("persons", "/second-brain/persons", "table.persons tbody tr"),
    ("goals", "/second-brain/goals", "ul.memories li.memory"),
    ("graph", "/second-brain/graph", "canvas[data-layout-ms]"),
    ("skills", "/skills", "ul.skills li.skill"),
];

#[tokio::test]
#[cfg_attr(
    not(browser),
    ignore = "needs chromium and chromedriver (tests/build.rs looks for them)"
)]
async fn every_page_loads_without_console_errors_at_both_widths() {
    let browser = Browser::start("every_page_loads", |_| {}).await;
    let daemon = &browser.daemon;
    for (kind, summary) in [
        ("preference", "Prefers green tea over coffee"),
        ("goal", "Run a marathon in 2027"),
        ("habit", "Walks the dog every morning"),
    ] {
        add(daemon, kind, summary);
    }
    say(daemon, "c1", "My sister Carol lives in Paris.");
    end(daemon, "c1");
    let persons = ok(daemon.get("/api/brain/persons"), 200);
    let carol = persons["items"][0]["id"]
        .as_str()
        .expect("a person")
        .to_string();

    let person_page = format!("/second-brain/persons/{carol}");
    let mut pages: Vec<(&str, &str, &str)> = PAGES.to_vec();
    pages.push(("person", &person_page, "ul.memories li.memory"));
    for width in WIDTHS {
        browser.set_width(width).await;
        for &(name, path, drawn) in &pages {
            browser.open(path).await;
            browser.wait_for(drawn).await;
            browser
                .assert_no_console_errors(&format!("{path} at {width} px"))
                .await;
            browser
                .assert_fits_and_screenshot(&format!("{name}-{width}"))
                .await;
        }
    }
    // The login page, after logging out, at both widths.
    browser.click(".header-links form button").await;
    for width in WIDTHS {
        browser.set_width(width).await;
        browser.wait_for("#token").await;
        browser.screenshot(&format!("login-{width}")).await;
    }
    browser.close().await;
}

#[tokio::test]
#[cfg_attr(
    not(browser),
    ignore = "needs chromium and chromedriver (tests/build.rs looks for them)"
)]
async fn a_page_without_a_session_leads_to_the_login_and_back() {
    let browser = Browser::start("login_round_trip", |_| {}).await;
    // Log out, then ask for a page: the login page comes, and returns there.
    browser.open("/skills").await;
    browser.click(".header-links form button").await;
    browser.wait_for("#token").await;
    browser
        .client
        .goto(&browser.url("/second-brain/goals"))
        .await
        .expect("navigate");
    browser.wait_for("#token").await;
    browser.fill("#token", "not-the-token-at-all").await;
    browser.click("form button[type=submit]").await;
    browser.wait_for_text("p.error", "not this daemon's").await;
    browser.fill("#token", engram_e2e::OPERATOR_TOKEN).await;
    browser.click("form button[type=submit]").await;
    browser.wait_for("#brain-status[data-learning]").await;
    let path = browser.client.current_url().await.expect("url");
    assert_eq!(path.path(), "/second-brain/goals");
    // The cookie is HttpOnly: page scripts cannot read the session.
    let cookies = browser
        .client
        .execute("return document.cookie", vec![])
        .await
        .expect("cookie");
    assert_eq!(cookies, json!(""));
    browser.close().await;
}

#[tokio::test]
#[cfg_attr(
    not(browser),
    ignore = "needs chromium and chromedriver (tests/build.rs looks for them)"
)]
async fn the_header_pauses_and_resumes_learning_and_follows_changes_live() {
    let browser = Browser::start("header", |_| {}).await;
    let daemon = &browser.daemon;
    browser.open("/skills").await;
    browser
        .wait_for_text("#brain-status", "learning on · 0 memories")
        .await;

    browser.click("#learning-toggle").await;
    browser
        .wait_for_text("#brain-status", "learning paused")
        .await;
    browser
        .wait_for_text("#learning-toggle", "Resume learning")
        .await;
    assert_eq!(
        ok(daemon.get("/api/brain/status"), 200)["learning_paused"],
        json!(true)
    );

    // A change made elsewhere (another client) reaches the header through /api/events.
    add(daemon, "preference", "Prefers trains to planes");
    browser
        .wait_for_text("#brain-status", "1 memory (1 conscious")
        .await;
    ok(daemon.call("POST", "/api/brain/learning/resume", ""), 200);
    browser.wait_for_text("#brain-status", "learning on").await;

    browser.click("#learning-toggle").await;
    browser
        .wait_for_text("#brain-status", "learning paused")
        .await;
    browser.click("#learning-toggle").await;
    browser.wait_for_text("#brain-status", "learning on").await;
    assert_eq!(
        ok(daemon.get("/api/brain/status"), 200)["learning_paused"],
        json!(false)
    );
    browser.assert_no_console_errors("header").await;
    browser.close().await;
}
