//! The plugin kit: `engram plugins new | build | test`. `new` writes a crate that
//! builds as it is (the world's export implemented, a unit test, plugin.toml, the WIT
//! files of this binary, an example input); `build` runs cargo for wasm32-wasip2 and
//! puts `plugin.wasm` beside `plugin.toml`, once the runtime has checked it implements
//! its world; `test` makes one call through the real runtime. The crate's directory is
//! then a package `engram plugins install` takes as it is.

mod build;
mod new;
mod run;

pub use build::build;
pub use new::create;
pub use run::call;

use crate::runtime::World;

/// The world named `name` (`extractor`, `resolver`, `consolidator`, `skill-tool`).
pub fn parse_world(name: &str) -> Result<World, String> {
    World::ALL
        .into_iter()
        .find(|w| w.as_str() == name)
        .ok_or_else(|| {
            let names: Vec<&str> = World::ALL.iter().map(|w| w.as_str()).collect();
            format!("`{name}` is not a world (one of: {})", names.join(", "))
        })
}
