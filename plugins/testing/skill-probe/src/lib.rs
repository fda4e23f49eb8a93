//! Test guest `skill-probe` (world `skill-tool`). Its argument is a command, not JSON,
//! so each test says exactly what the guest does:
//!
//! - `read <path>`: reads the file at `<path>` as given (absolute or relative);
//!   `ok <bytes>` or `Err(<io error>)`.
//! - `list <path>`: lists a directory; `ok <names, sorted, comma-separated>`.
//! - `write <path>`: tries to create a file; `ok` or `Err(<io error>)`.
//! - `env`: `ok <env var count> <arg count>` (the host grants neither).
//! - `tool <name> <args json>`: calls `tools.invoke`; `ok <result>` or `Err(<error>)`.
//! - `spin`: loops forever (the deadline must stop it).
//! - `trap`: panics (a trap with `panic = "abort"`).

wit_bindgen::generate!({ path: "../../../wit", world: "skill-tool" });

use engram::plugin::tools;

struct Probe;

impl Guest for Probe {
    fn run(args: String) -> Result<String, String> {
        let (command, rest) = args.split_once(' ').unwrap_or((args.as_str(), ""));
        match command {
            "read" => std::fs::read(rest)
                .map(|b| format!("ok {}", b.len()))
                .map_err(|e| e.to_string()),
            "list" => std::fs::read_dir(rest)
                .and_then(|entries| {
                    let mut names = entries
                        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                        .collect::<std::io::Result<Vec<_>>>()?;
                    names.sort();
                    Ok(format!("ok {}", names.join(",")))
                })
                .map_err(|e| e.to_string()),
            "write" => std::fs::write(rest, b"x")
                .map(|()| "ok".to_string())
                .map_err(|e| e.to_string()),
            "env" => Ok(format!(
                "ok {} {}",
                std::env::vars_os().count(),
                std::env::args_os().count()
            )),
            "tool" => {
                let (name, json) = rest.split_once(' ').unwrap_or((rest, "{}"));
                tools::invoke(name, json)
                    .map(|r| format!("ok {r}"))
                    .map_err(|e| format!("{e:?}"))
            }
            "spin" => {
                let mut n = 0u64;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "trap" => panic!("skill-probe traps on request"),
            other => Err(format!("unknown command `{other}`")),
        }
    }
}

export!(Probe);
