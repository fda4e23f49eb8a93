//! `builtin:extract-rules`: the default extractor, [`engram_strategies::extract`]
//! behind the `extractor` world. The conversions live in `guest-convert`.

wit_bindgen::generate!({
    path: "../../wit",
    world: "extractor",
    with: { "engram:plugin/types@0.1.1": guest_convert::wit },
    generate_all,
});

use engram::plugin::log::{Level, log};
use engram_strategies::{extract, model};
use guest_convert::wit;

struct RuleExtractor;

impl Guest for RuleExtractor {
    fn extract(conversation: wit::Conversation, now: i64) -> Vec<wit::Candidate> {
        let conversation = model::Conversation::from(conversation);
        let candidates = extract::extract(&conversation, now);
        log(
            Level::Debug,
            &format!(
                "{} candidate(s) from {} message(s) of conversation {}",
                candidates.len(),
                conversation.messages.len(),
                conversation.id
            ),
        );
        candidates.into_iter().map(Into::into).collect()
    }
}

export!(RuleExtractor);
