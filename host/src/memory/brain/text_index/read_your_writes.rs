use engram_strategies::model::MemoryType;

use crate::memory::brain::{Brain, MemoryEdit, NewMemory};

fn found(brain: &Brain, word: &str) -> Vec<String> {
    brain
        .search("default", word, 10)
        .expect("search")
        .into_iter()
        .map(|hit| hit.record.id)
        .collect()
}

/// Writers in several threads add, edit and delete through group commit; each
/// searches right after its write is acknowledged and must see it, whichever
/// commit carried it.
#[test]
fn a_search_after_an_acknowledged_write_sees_it() {
    let fixture = crate::memory::brain::tests::fixture();
    let brain = &fixture.brain;
    // Built before the writes, so that every change reaches it by the writer.
    assert!(found(brain, "nothing").is_empty());
    std::thread::scope(|s| {
        for t in 0..4 {
            let brain = &brain;
            s.spawn(move || {
                for i in 0..25 {
                    let word = format!("zq{t}x{i}");
                    let added = brain
                        .add(
                            "default",
                            NewMemory {
                                memory_type: MemoryType::Preference,
                                summary: format!("likes {word}"),
                                detail: None,
                                evidence: None,
                                scope: None,
                                confidence: None,
                                importance: None,
                                holder: None,
                                attribute: None,
                            },
                        )
                        .expect("add")
                        .record;
                    assert_eq!(found(brain, &word), [added.id.as_str()], "after the add");
                    let edited = format!("{word}edited");
                    brain
                        .edit(
                            "default",
                            &added.id,
                            MemoryEdit {
                                summary: Some(format!("likes {edited}")),
                                ..Default::default()
                            },
                        )
                        .expect("edit");
                    assert_eq!(found(brain, &edited), [added.id.as_str()], "after the edit");
                    assert!(found(brain, &word).is_empty(), "the old text is gone");
                    brain.delete("default", &added.id).expect("delete");
                    assert!(found(brain, &edited).is_empty(), "after the delete");
                }
            });
        }
    });
}
