//! /second-brain/memory: add, edit inline, filter by scope, search and delete a
//! memory, each checked against what the daemon then stores; and the sleep and stale
//! badges.

use engram_e2e::ok;
use serde_json::json;

use crate::brain_data::{import, memory};
use crate::browser::Browser;

/// The card of the memory whose summary contains `text`.
fn card(text: &str) -> String {
    format!("//li[contains(@class,'memory')][.//p[@class='summary'][contains(., '{text}')]]")
}

#[tokio::test]
#[cfg_attr(
    not(browser),
    ignore = "needs chromium and chromedriver (tests/build.rs looks for them)"
)]
async fn add_edit_filter_search_and_delete_a_memory() {
    let browser = Browser::start("memory_page", |_| {}).await;
    let daemon = &browser.daemon;
    let conscious = json!({ "type": "preference", "summary": "Prefers window seats on trains" });
    ok(
        daemon.call("POST", "/api/brain/memory", &conscious.to_string()),
        201,
    );

    browser.open("/second-brain/memory").await;
    browser.wait_for_text("ul.memories", "window seats").await;

    // Add.
    browser.click("details.add > summary").await;
    browser
        .fill(
            "form.add-memory textarea[name=summary]",
            "Allergic to peanuts",
        )
        .await;
    browser
        .choose("form.add-memory select[name=type]", "constraint")
        .await;
    browser.click("form.add-memory button[type=submit]").await;
    browser
        .wait_for_text("ul.memories", "Allergic to peanuts")
        .await;
    let stored = ok(daemon.get("/api/brain/memory/search?q=peanuts"), 200);
    let memory = &stored["items"][0]["memory"];
    assert_eq!(memory["type"], "constraint");
    assert_eq!(memory["evidence"], "manual");
    let id = memory["id"].as_str().expect("id").to_string();

    // Edit inline: summary, importance and scope (to subconscious: the sleep badge).
    let peanuts = card("Allergic to peanuts");
    browser
        .client
        .find(fantoccini::Locator::XPath(&peanuts))
        .await
        .expect("card")
        .find(fantoccini::Locator::Css("button.edit"))
        .await
        .expect("edit button")
        .click()
        .await
        .expect("click edit");
    browser
        .fill(
            "form.memory-edit textarea[name=summary]",
            "Severely allergic to peanuts",
        )
        .await;
    browser
        .fill("form.memory-edit input[name=importance]", "0.95")
        .await;
    browser
        .choose("form.memory-edit select[name=scope]", "subconscious")
        .await;
    browser.click("form.memory-edit button[type=submit]").await;
    browser
        .wait_for_text("ul.memories", "Severely allergic")
        .await;
    let edited = ok(daemon.get(&format!("/api/brain/memory/{id}")), 200);
    assert_eq!(edited["summary"], "Severely allergic to peanuts");
    assert_eq!(edited["scope"], "subconscious");
    assert!((edited["importance"].as_f64().expect("importance") - 0.95).abs() < 1e-6);
    browser
        .wait_for_text(&format!("li.memory[data-id='{id}'] .badge-sleep"), "asleep")
        .await;

    // An invalid edit is refused with the server's reason shown, and nothing changes.
    browser
        .click(&format!("li.memory[data-id='{id}'] button.edit"))
        .await;
    browser
        .fill("form.memory-edit input[name=confidence]", "")
        .await;
    browser
        .client
        .execute(
            "document.querySelector('form.memory-edit input[name=confidence]').removeAttribute('required');\
             document.querySelector('form.memory-edit input[name=confidence]').value = '7';",
            vec![],
        )
        .await
        .expect("set an out-of-range value");
    browser
        .client
        .execute(
            "document.querySelector('form.memory-edit input[name=confidence]').removeAttribute('max');",
            vec![],
        )
        .await
        .expect("lift the form's own limit so the server's is tested");
    browser.click("form.memory-edit button[type=submit]").await;
    browser
        .wait_for_text("form.memory-edit p.error", "confidence")
        .await;
    browser.wait_for_text("#toasts", "Could not save").await;
    // The refused request is the only thing the console reports.
    let errors = browser.console_errors().await;
    assert!(
        errors.iter().all(|e| e.contains("422")),
        "unexpected console errors: {errors:#?}"
    );
    let unchanged = ok(daemon.get(&format!("/api/brain/memory/{id}")), 200);
    assert_eq!(unchanged["confidence"], edited["confidence"]);
    // The same failure again replaces its toast instead of stacking a second, and an
    // error toast clears by itself.
    browser
        .client
        .execute(
            "document.querySelectorAll('.toast-error').forEach(t => t.dataset.seen = '1')",
            vec![],
        )
        .await
        .expect("mark the toast on screen");
    browser.click("form.memory-edit button[type=submit]").await;
    let saving = "return [...document.querySelectorAll('.toast-error')]\
                    .filter(t => t.textContent.includes('Could not save'))";
    browser
        .wait_until(
            "the repeated failure's toast",
            &format!("{saving}.some(t => !t.dataset.seen)"),
        )
        .await;
    let shown = browser
        .client
        .execute(&format!("{saving}.length"), vec![])
        .await
        .expect("count the toasts");
    assert_eq!(shown, 1, "the same failure twice is one toast");
    let errors = browser.console_errors().await;
    assert!(
        errors.iter().all(|e| e.contains("422")),
        "unexpected console errors: {errors:#?}"
    );
    browser
        .wait_until(
            "the error toast to clear",
            "return document.querySelectorAll('.toast-error').length === 0",
        )
        .await;
    browser
        .click("form.memory-edit .actions button[type=button]")
        .await;

    // Filter by scope: the subconscious tier has only the edited memory.
    browser.click("label[for=scope-subconscious]").await;
    browser
        .wait_until(
            "the subconscious filter",
            "return location.search.includes('scope=subconscious') && \
             document.querySelectorAll('ul.memories li.memory').length === 1",
        )
        .await;
    assert_eq!(
        browser.texts("ul.memories li.memory p.summary").await,
        vec!["Severely allergic to peanuts".to_string()]
    );
    browser.click("label[for=scope-conscious]").await;
    browser
        .wait_until(
            "the conscious filter",
            "const items = [...document.querySelectorAll('ul.memories li.memory p.summary')].map(e => e.textContent);\
             return items.length === 1 && items[0].includes('window seats');",
        )
        .await;
    browser.click("label[for=scope-all]").await;
    browser
        .wait_until(
            "all memories",
            "return document.querySelectorAll('ul.memories li.memory').length === 2",
        )
        .await;

    // Search.
    browser.fill("form.search input[name=q]", "trains").await;
    browser.click("form.search button[type=submit]").await;
    browser
        .wait_until(
            "search results",
            "const items = [...document.querySelectorAll('ul.memories li.memory p.summary')].map(e => e.textContent);\
             return items.length === 1 && items[0].includes('window seats');",
        )
        .await;
    browser
        .wait_for_text("p.list-summary", "matching “trains”")
        .await;

    // Delete, after a confirmation; cancelling first keeps it.
    browser.click("form.search button[type=button]").await;
    browser
        .wait_for_text("ul.memories", "Severely allergic")
        .await;
    let delete = format!("li.memory[data-id='{id}'] button.delete");
    browser.click(&delete).await;
    browser.click("dialog.confirm button[value=cancel]").await;
    ok(daemon.get(&format!("/api/brain/memory/{id}")), 200);
    browser.click(&delete).await;
    browser.click("dialog.confirm button[value=confirm]").await;
    browser
        .wait_until(
            "the card to go",
            &format!("return !document.querySelector(\"li.memory[data-id='{id}']\")"),
        )
        .await;
    assert_eq!(daemon.get(&format!("/api/brain/memory/{id}")).status, 404);

    browser.assert_no_console_errors("memory page").await;
    browser.close().await;
}

#[tokio::test]
#[cfg_attr(
    not(browser),
    ignore = "needs chromium and chromedriver (tests/build.rs looks for them)"
)]
async fn subconscious_and_stale_memories_carry_their_badges() {
    let browser = Browser::start("memory_badges", |_| {}).await;
    let mut asleep = memory(
        "mem_01aaaaaaaaaaaaaaaaaaaaaaaa",
        "habit",
        "Used to play chess on Sundays",
    );
    asleep["scope"] = json!("subconscious");
    let mut stale = memory(
        "mem_01bbbbbbbbbbbbbbbbbbbbbbbb",
        "preference",
        "Liked a phone brand years ago",
    );
    stale["stale"] = json!(true);
    let awake = memory(
        "mem_01cccccccccccccccccccccccc",
        "identity",
        "Works as a nurse",
    );
    assert_eq!(import(&browser.daemon, &[asleep, stale, awake]), 3);

    browser.open("/second-brain/memory").await;
    let badges = |id: &str| format!("li.memory[data-id='{id}'] .badge");
    browser
        .wait_for_text(&badges("mem_01aaaaaaaaaaaaaaaaaaaaaaaa"), "")
        .await;
    let of = |texts: Vec<String>| texts.join(" ");
    let asleep_badges = of(browser
        .texts(&badges("mem_01aaaaaaaaaaaaaaaaaaaaaaaa"))
        .await);
    let stale_badges = of(browser
        .texts(&badges("mem_01bbbbbbbbbbbbbbbbbbbbbbbb"))
        .await);
    let awake_badges = of(browser
        .texts(&badges("mem_01cccccccccccccccccccccccc"))
        .await);
    assert!(asleep_badges.contains("asleep"), "{asleep_badges}");
    assert!(!asleep_badges.contains("stale"), "{asleep_badges}");
    assert!(stale_badges.contains("stale"), "{stale_badges}");
    assert!(!stale_badges.contains("asleep"), "{stale_badges}");
    assert!(
        !awake_badges.contains("stale") && !awake_badges.contains("asleep"),
        "{awake_badges}"
    );
    browser.assert_no_console_errors("memory badges").await;
    browser.close().await;
}

#[tokio::test]
#[cfg_attr(
    not(browser),
    ignore = "needs chromium and chromedriver (tests/build.rs looks for them)"
)]
async fn the_conversations_scope_searches_what_was_said_and_deletes_a_conversation() {
    let browser = Browser::start("memory_conversations", |_| {}).await;
    let daemon = &browser.daemon;
    for (conversation, name, content) in [
        (
            "trip",
            "Anna",
            "I booked the ferry to the island for Saturday.",
        ),
        ("trip", "Ben", "Great, I will pack the tent."),
        ("work", "Anna", "The ferry schedule changes in winter."),
    ] {
        let message = json!({ "role": "user", "name": name, "content": content });
        ok(
            daemon.call(
                "POST",
                &format!("/api/brain/conversations/{conversation}/messages"),
                &message.to_string(),
            ),
            201,
        );
    }

    browser.open("/second-brain/memory").await;
    browser.click("label[for=scope-conversations]").await;
    browser
        .wait_for_text("p.list-summary:not([hidden])", "Search what was said")
        .await;
    browser.fill("form.search input[name=q]", "ferry").await;
    browser.click("form.search button[type=submit]").await;
    browser
        .wait_until(
            "two transcript hits",
            "return document.querySelectorAll('ul.said li.said').length === 2",
        )
        .await;
    let metas = browser.texts("ul.said li.said p.meta").await;
    assert!(
        metas
            .iter()
            .any(|m| m.contains("Anna") && m.contains("conversation trip")),
        "{metas:?}"
    );
    assert!(
        metas
            .iter()
            .all(|m| m.chars().take(4).all(|c| c.is_ascii_digit())),
        "each hit starts with its date: {metas:?}"
    );
    assert!(
        browser
            .texts("ul.said li.said p.summary")
            .await
            .iter()
            .any(|s| s == "I booked the ferry to the island for Saturday.")
    );
    assert!(
        browser
            .all("ul.memories:not(.said) li.memory")
            .await
            .is_empty(),
        "no memory cards in this scope"
    );

    // Deleting a conversation takes its messages out of the search.
    browser
        .click("li.said[data-conversation='trip'] button.delete")
        .await;
    browser.click("dialog.confirm button[value=confirm]").await;
    browser
        .wait_until(
            "the conversation's hits to go",
            "return document.querySelectorAll('ul.said li.said').length === 1",
        )
        .await;
    let left = ok(
        daemon.get("/api/brain/memory/search?q=ferry&scope=conversations"),
        200,
    );
    let items = left["items"].as_array().expect("items");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["tier"], "transcript");
    assert_eq!(items[0]["message"]["conversation_id"], "work");
    browser
        .assert_no_console_errors("memory page, conversations")
        .await;
    browser.close().await;
}

#[tokio::test]
#[cfg_attr(
    not(browser),
    ignore = "needs chromium and chromedriver (tests/build.rs looks for them)"
)]
async fn what_the_agent_deleted_is_listed_and_restored() {
    let browser = Browser::start("memory_dismissed", |_| {}).await;
    let daemon = &browser.daemon;
    let added = ok(
        daemon.call(
            "POST",
            "/api/brain/memory",
            &json!({ "type": "identity", "summary": "Keeps bees on the roof" }).to_string(),
        ),
        201,
    );
    let id = added["id"].as_str().expect("id").to_string();
    // The agent's token deletes it: hidden, and waiting for the person.
    ok(
        daemon.call("DELETE", &format!("/api/brain/memory/{id}"), ""),
        204,
    );

    browser.open("/second-brain/memory").await;
    let card = format!("section.dismissed li.dismissed-memory[data-id='{id}']");
    browser.wait_for_text(&card, "Keeps bees on the roof").await;
    browser
        .wait_for_text("section.dismissed", "restorable until")
        .await;
    browser.wait_for_text("p.list-summary", "No memories").await;
    browser.assert_fits_and_screenshot("memory-dismissed").await;

    browser.click(&format!("{card} button.restore")).await;
    browser
        .wait_until(
            "the restored memory in the list",
            &format!(
                "return !document.querySelector(\"{card}\") && \
                 document.querySelector('section.dismissed').hidden && \
                 !!document.querySelector(\"ul.memories li.memory[data-id='{id}']\")"
            ),
        )
        .await;
    browser.wait_for_text("#toasts", "Restored").await;
    let found = ok(daemon.get("/api/brain/memory/search?q=bees"), 200);
    assert_eq!(found["items"][0]["memory"]["id"], id.as_str());
    browser
        .assert_no_console_errors("memory page, dismissed")
        .await;
    browser.close().await;
}
