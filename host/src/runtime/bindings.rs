//! Host-side bindings of `wit/`, one module per world. The shared interfaces are
//! generated once (in `extractor`) and reused by the other worlds through `with`, so
//! that every world speaks the same Rust types and each host interface is implemented
//! exactly once (in `runtime::host`).

pub mod extractor {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "extractor",
    });
}

pub mod resolver {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "resolver",
        with: {
            "engram:plugin/types": super::extractor::engram::plugin::types,
            "engram:plugin/log": super::extractor::engram::plugin::log,
            "engram:plugin/config": super::extractor::engram::plugin::config,
            "engram:plugin/kv": super::extractor::engram::plugin::kv,
            "engram:plugin/memories": super::extractor::engram::plugin::memories,
        },
    });
}

pub mod consolidator {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "consolidator",
        with: {
            "engram:plugin/types": super::extractor::engram::plugin::types,
            "engram:plugin/log": super::extractor::engram::plugin::log,
            "engram:plugin/config": super::extractor::engram::plugin::config,
            "engram:plugin/kv": super::extractor::engram::plugin::kv,
            "engram:plugin/memories": super::extractor::engram::plugin::memories,
        },
    });
}

pub mod skill_tool {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "skill-tool",
        with: {
            "engram:plugin/log": super::extractor::engram::plugin::log,
        },
    });
}

pub use extractor::engram::plugin::{config, kv, log, memories, types};
pub use skill_tool::engram::plugin::tools;
