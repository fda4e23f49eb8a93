//! /second-brain/persons and /second-brain/persons/{id}: the persons a conversation
//! names are listed with their memory counts, a person's page shows their facts,
//! related memories and linked persons, and an unknown id says so.

use engram_e2e::{listed, ok};
use serde_json::{Value, json};

use crate::brain_data::{end, import, link, memory, person, say};
use crate::browser::Browser;

fn person_named<'a>(persons: &'a Value, name: &str) -> &'a Value {
    listed(persons, "items", "name", name)
}

#[tokio::test]
#[cfg_attr(
    not(browser),
    ignore = "needs chromium and chromedriver (tests/build.rs looks for them)"
)]
async fn persons_are_listed_and_open_their_page() {
    let browser = Browser::start("persons_page", |_| {}).await;
    let daemon = &browser.daemon;

    // Nobody yet: the empty state.
    browser.open("/second-brain/persons").await;
    browser
        .wait_for_text(".empty:not([hidden])", "No persons yet")
        .await;
    assert!(browser.all("table.persons tbody tr").await.is_empty());

    // A conversation names Carol and Tom; one more memory names both of them.
    say(daemon, "c1", "My sister Carol lives in Paris.");
    say(daemon, "c1", "My brother Tom works in Berlin.");
    end(daemon, "c1");
    let persons = ok(daemon.get("/api/brain/persons"), 200);
    let carol = person_named(&persons, "Carol")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let tom = person_named(&persons, "Tom")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let hike = "Carol and Tom hiked the Alps together";
    import(
        daemon,
        &[
            memory("mem_hike", "episode", hike),
            link("mem_hike", &carol, None),
            link("mem_hike", &tom, Some("sibling")),
        ],
    );
    let detail = ok(daemon.get(&format!("/api/brain/persons/{carol}")), 200);
    let fact = detail["facts"][0]["summary"]
        .as_str()
        .expect("Carol has a fact")
        .to_string();
    assert_eq!(detail["memory_count"], 2);

    // The list: both, with their memory counts, each name a link to the page.
    browser.open("/second-brain/persons").await;
    browser.wait_for("table.persons tbody tr").await;
    let carol_row = format!("table.persons tbody tr[data-id='{carol}']");
    browser.wait_for(&carol_row).await;
    assert_eq!(browser.all("table.persons tbody tr").await.len(), 2);
    assert_eq!(
        browser
            .texts(&format!("{carol_row} td[data-label=Memories]"))
            .await,
        vec!["2".to_string()]
    );
    assert_eq!(
        browser
            .texts(&format!(
                "table.persons tbody tr[data-id='{tom}'] td[data-label=Memories]"
            ))
            .await,
        vec!["2".to_string()]
    );
    browser
        .wait_for(&format!("{carol_row} td[data-label='Last seen'] time"))
        .await;
    browser.wait_for_text("p.list-summary", "2 persons").await;
    // Every person fits one page: no "Load more".
    let more = browser.wait_for("button.more").await;
    assert!(!more.is_displayed().await.expect("displayed"));

    // Carol's page: the title, her fact, the memory naming Tom, Tom as linked.
    browser.click(&format!("{carol_row} a")).await;
    browser.wait_for_text("#page-title", "Carol").await;
    let title = browser
        .client
        .execute("return document.title", vec![])
        .await
        .expect("title");
    assert!(
        title.as_str().is_some_and(|t| t.starts_with("Carol")),
        "{title}"
    );
    browser
        .wait_for_text(".person-facts ul.memories li.memory", &fact)
        .await;
    browser
        .wait_for_text(".person-related ul.memories li.memory", hike)
        .await;
    browser
        .wait_for_text(".person-linked ul.linked-persons", "Tom")
        .await;
    browser.wait_for_text(".person-meta", "2 memories").await;
    browser.screenshot("person-carol-1280").await;

    // A linked person leads to their page.
    browser
        .click(&format!(
            ".person-linked a[href='/second-brain/persons/{tom}']"
        ))
        .await;
    browser.wait_for_text("#page-title", "Tom").await;
    browser
        .wait_for_text(".person-related ul.memories li.memory", hike)
        .await;
    browser
        .assert_no_console_errors("persons and person pages")
        .await;

    // At 390 px the table stacks its cells, each labelled.
    browser.set_width(390).await;
    browser.open("/second-brain/persons").await;
    browser.wait_for(&carol_row).await;
    let stacked = browser
        .client
        .execute(
            "const cell = document.querySelector('table.persons tbody td[data-label=Memories]');\
             return getComputedStyle(cell).display === 'block' \
               && document.documentElement.scrollWidth <= window.innerWidth + 1;",
            vec![],
        )
        .await
        .expect("measure");
    assert_eq!(stacked, json!(true), "the persons table at 390 px");
    browser.set_width(1280).await;

    // An unknown id: a clear message, not a crash; the 404 is the only console error.
    browser.open("/second-brain/persons/per_nobody").await;
    browser.wait_for_text("#page-title", "No such person").await;
    browser.wait_for_text(".not-found", "per_nobody").await;
    let errors = browser.console_errors().await;
    assert!(
        errors.iter().all(|e| e.contains("404")),
        "unexpected console errors: {errors:#?}"
    );
    browser.close().await;
}

#[tokio::test]
#[cfg_attr(
    not(browser),
    ignore = "needs chromium and chromedriver (tests/build.rs looks for them)"
)]
async fn more_persons_than_a_page_load_on_demand() {
    let browser = Browser::start("persons_paging", |_| {}).await;
    let lines: Vec<Value> = (0..60)
        .map(|i| person(&format!("per_{i:026}"), &format!("Person {i:02}")))
        .collect();
    assert_eq!(import(&browser.daemon, &lines), 60);
    let first = ok(browser.daemon.get("/api/brain/persons?limit=50"), 200);
    assert_eq!(first["items"].as_array().map(Vec::len), Some(50));
    assert!(first["next_cursor"].is_string());

    browser.open("/second-brain/persons").await;
    browser
        .wait_until(
            "the first page",
            "return document.querySelectorAll('table.persons tbody tr').length === 50",
        )
        .await;
    browser.click("button.more:not([hidden])").await;
    browser
        .wait_until(
            "the second page",
            "return document.querySelectorAll('table.persons tbody tr').length === 60 \
             && document.querySelector('button.more').hidden",
        )
        .await;
    let names = browser.texts("table.persons tbody tr td:first-child").await;
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 60, "every person once: {names:?}");
    browser.assert_no_console_errors("persons paging").await;
    browser.close().await;
}
