//! `builtin:resolve-default`: the default resolver, [`engram_strategies::resolve`]
//! behind the `resolver` world. The conversions live in `guest-convert`.

wit_bindgen::generate!({
    path: "../../wit",
    world: "resolver",
    with: { "engram:plugin/types@0.1.1": guest_convert::wit },
    generate_all,
});

use engram::plugin::log::{Level, log};
use engram_strategies::{model, resolve};
use guest_convert::wit;

struct DefaultResolver;

impl Guest for DefaultResolver {
    fn resolve(candidate: wit::Candidate, related: Vec<wit::Memory>) -> wit::Resolution {
        let candidate = model::Candidate::from(candidate);
        let related: Vec<model::Memory> = related.into_iter().map(Into::into).collect();
        let resolution = resolve::resolve(&candidate, &related);
        // The decision and ids only: the user's facts stay out of the host's log.
        log(
            Level::Debug,
            &format!("{resolution:?} against {} related memories", related.len()),
        );
        resolution.into()
    }
}

export!(DefaultResolver);
