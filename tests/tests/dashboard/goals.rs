//! /second-brain/goals: the Goals and Projects tabs (an ARIA tablist, driven by mouse
//! and keyboard, the tab kept in the URL); goals and projects added there are stored
//! as ordinary memories of type goal and project, and each shows only under its tab.

use engram_e2e::ok;
use fantoccini::key::Key;
use serde_json::{Value, json};

use crate::browser::{Browser, WIDTHS};

/// The summaries of the stored memories of `kind`.
fn stored(browser: &Browser, kind: &str) -> Vec<String> {
    let listed = ok(
        browser
            .daemon
            .get(&format!("/api/brain/memory?type={kind}")),
        200,
    );
    listed["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|m| m["summary"].as_str().expect("summary").to_string())
        .collect()
}

/// Which tab is selected, which panel shows, and which element has the focus.
async fn tab_state(browser: &Browser) -> Value {
    browser
        .client
        .execute(
            "const tabs = [...document.querySelectorAll('[role=tab]')];\
             return {\
               selected: tabs.filter(t => t.getAttribute('aria-selected') === 'true').map(t => t.dataset.tab),\
               tabbable: tabs.filter(t => t.tabIndex === 0).map(t => t.dataset.tab),\
               shown: [...document.querySelectorAll('[role=tabpanel]')].filter(p => !p.hidden).map(p => p.dataset.tab),\
               focused: document.activeElement && document.activeElement.id,\
               search: location.search,\
             };",
            vec![],
        )
        .await
        .expect("read the tabs")
}

#[tokio::test]
#[cfg_attr(
    not(browser),
    ignore = "needs chromium and chromedriver (tests/build.rs looks for them)"
)]
async fn goals_and_projects_are_added_under_their_own_tabs() {
    let browser = Browser::start("goals_page", |_| {}).await;
    let daemon = &browser.daemon;
    let goal = json!({ "type": "goal", "summary": "Learn to sail" });
    ok(
        daemon.call("POST", "/api/brain/memory", &goal.to_string()),
        201,
    );

    browser.open("/second-brain/goals").await;
    browser
        .wait_for_text("#panel-goals ul.memories", "Learn to sail")
        .await;
    let state = tab_state(&browser).await;
    assert_eq!(state["selected"], json!(["goals"]));
    assert_eq!(state["tabbable"], json!(["goals"]));
    assert_eq!(state["shown"], json!(["goals"]));
    // The hidden panel has loaded too (WebDriver reads no text from hidden elements).
    browser
        .wait_until(
            "the empty state of Projects",
            "return document.querySelector('#panel-projects p.list-summary').textContent.includes('No projects yet')",
        )
        .await;

    // Add a goal in the Goals tab: it shows there and is stored with type goal.
    browser
        .fill(
            "#panel-goals form.add-memory textarea[name=summary]",
            "Run a marathon in 2027",
        )
        .await;
    browser
        .click("#panel-goals form.add-memory button[type=submit]")
        .await;
    browser
        .wait_for_text("#panel-goals ul.memories", "Run a marathon in 2027")
        .await;
    browser
        .wait_for_text("#toasts", "Added: Run a marathon")
        .await;
    browser
        .wait_for_text("#panel-goals p.list-summary", "2 goals")
        .await;
    let goals = stored(&browser, "goal");
    assert!(
        goals.contains(&"Run a marathon in 2027".to_string()),
        "{goals:?}"
    );
    assert!(stored(&browser, "project").is_empty());

    // To Projects by keyboard: arrow right from the focused Goals tab.
    browser
        .wait_for("#tab-goals")
        .await
        .send_keys(&Key::Right.to_string())
        .await
        .expect("arrow right");
    browser
        .wait_until(
            "the Projects tab",
            "return document.querySelector('#tab-projects').getAttribute('aria-selected') === 'true'",
        )
        .await;
    let state = tab_state(&browser).await;
    assert_eq!(state["selected"], json!(["projects"]));
    assert_eq!(state["tabbable"], json!(["projects"]));
    assert_eq!(state["shown"], json!(["projects"]));
    assert_eq!(state["focused"], "tab-projects");
    assert_eq!(state["search"], "?tab=projects");
    // Arrow keys wrap around, Home and End go to the ends.
    browser
        .wait_for("#tab-projects")
        .await
        .send_keys(&Key::Right.to_string())
        .await
        .expect("arrow right");
    assert_eq!(tab_state(&browser).await["selected"], json!(["goals"]));
    browser
        .wait_for("#tab-goals")
        .await
        .send_keys(&Key::End.to_string())
        .await
        .expect("end");
    let state = tab_state(&browser).await;
    assert_eq!(state["selected"], json!(["projects"]));
    assert_eq!(state["focused"], "tab-projects");

    // Add a project: it shows only under Projects, stored with type project.
    browser
        .fill(
            "#panel-projects form.add-memory textarea[name=summary]",
            "Renovate the kitchen",
        )
        .await;
    browser
        .click("#panel-projects form.add-memory button[type=submit]")
        .await;
    browser
        .wait_for_text("#panel-projects ul.memories", "Renovate the kitchen")
        .await;
    assert_eq!(stored(&browser, "project"), vec!["Renovate the kitchen"]);
    assert!(!stored(&browser, "goal").contains(&"Renovate the kitchen".to_string()));
    let goal_summaries: Value = browser
        .client
        .execute(
            "return [...document.querySelectorAll('#panel-goals ul.memories p.summary')].map(p => p.textContent)",
            vec![],
        )
        .await
        .expect("goal summaries");
    let goal_summaries = goal_summaries.as_array().expect("array").clone();
    assert_eq!(goal_summaries.len(), 2, "{goal_summaries:?}");
    assert!(
        goal_summaries
            .iter()
            .all(|s| s.as_str() != Some("Renovate the kitchen")),
        "{goal_summaries:?}"
    );

    // Mouse: back to Goals by a click; the URL loses the tab parameter.
    browser.click("#tab-goals").await;
    let state = tab_state(&browser).await;
    assert_eq!(state["selected"], json!(["goals"]));
    assert_eq!(state["search"], "");

    // The URL opens the tab it names.
    browser.open("/second-brain/goals?tab=projects").await;
    browser
        .wait_for_text("#panel-projects ul.memories", "Renovate the kitchen")
        .await;
    let state = tab_state(&browser).await;
    assert_eq!(state["selected"], json!(["projects"]));
    assert_eq!(state["shown"], json!(["projects"]));

    for width in WIDTHS {
        browser.set_width(width).await;
        browser
            .assert_fits_and_screenshot(&format!("goals-projects-tab-{width}"))
            .await;
    }

    browser.assert_no_console_errors("goals page").await;
    browser.close().await;
}
