//! `engram service install|uninstall|status`: Engram as a service of the person's
//! session, so that agents configured with `engram mcp` find a daemon after a reboot.
//!
//! - Linux: a systemd user unit, `$XDG_CONFIG_HOME/systemd/user/engram.service` (else
//!   `~/.config/...`), enabled and started with `systemctl --user`. It runs
//!   `engram serve` on the data directory with JSON logs, which go to the journal
//!   (`journalctl --user -u engram`), and restarts on failure.
//! - macOS: a launchd agent, `~/Library/LaunchAgents/dev.engram.serve.plist`, loaded
//!   with `launchctl bootstrap gui/<uid>`; its logs go to `{data_dir}/logs/`.
//! - Windows: nothing is written; the command says what to do instead.
//!
//! The unit names this binary by its absolute path, so the service runs the `engram`
//! that installed it. Exit codes: 0 done, 1 failed (the message says which step and
//! what to run by hand).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::Subcommand;

/// The systemd unit's and the launchd agent's name.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // used on Linux, tested everywhere
pub const SYSTEMD_UNIT: &str = "engram.service";
#[cfg_attr(not(target_os = "macos"), allow(dead_code))] // used on macOS, tested everywhere
pub const LAUNCHD_LABEL: &str = "dev.engram.serve";

#[derive(Debug, Subcommand)]
pub enum ServiceCommand {
    /// Write the service definition, enable it and start it
    Install {
        /// Write the definition only: do not enable or start it
        #[arg(long)]
        no_start: bool,
    },
    /// Stop the service, disable it and remove its definition
    Uninstall,
    /// Whether the service is installed, enabled and running
    Status,
}

/// What the service runs: this binary on the data directory.
#[derive(Debug, Clone)]
pub struct ServiceSpec {
    pub binary: PathBuf,
    pub data_dir: PathBuf,
}

pub fn run(data_dir: &Path, command: ServiceCommand) -> anyhow::Result<ExitCode> {
    let binary = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| anyhow::anyhow!("cannot tell where this engram binary is: {e}"))?;
    let data_dir = std::path::absolute(data_dir)?;
    let spec = ServiceSpec { binary, data_dir };
    platform::run(&spec, command)
}

/// Quotes one argument of `ExecStart=` as systemd reads it: double quotes, with `\`
/// and `"` escaped, and `%` (a specifier) and `$` (a variable) doubled.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // used on Linux, tested everywhere
fn systemd_quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '%' => out.push_str("%%"),
            '$' => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The systemd user unit for `spec`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // used on Linux, tested everywhere
pub fn systemd_unit(spec: &ServiceSpec) -> String {
    format!(
        "# Written by `engram service install`; `engram service uninstall` removes it.
[Unit]
Description=Engram: memory, skills and the tool gate for AI agents

[Service]
Type=simple
ExecStart={binary} serve --data-dir {data} --log-format json
# Exit code 2 is a command line it will never accept: restarting would not help.
Restart=on-failure
RestartPreventExitStatus=2
RestartSec=2
StandardOutput=journal
StandardError=journal
UMask=0077
NoNewPrivileges=yes

[Install]
WantedBy=default.target
",
        binary = systemd_quote(&spec.binary.to_string_lossy()),
        data = systemd_quote(&spec.data_dir.to_string_lossy()),
    )
}

#[cfg_attr(not(target_os = "macos"), allow(dead_code))] // used on macOS, tested everywhere
fn xml_escape(text: &str) -> String {
    crate::html::escape(text)
}

/// The launchd agent for `spec`: started at login, restarted when it exits with a
/// failure, logs (JSON lines) under the data directory.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))] // used on macOS, tested everywhere
pub fn launchd_plist(spec: &ServiceSpec) -> String {
    let logs = spec.data_dir.join("logs");
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Written by `engram service install`; `engram service uninstall` removes it. -->
<plist version="1.0">
<dict>
  <key>Label</key><string>{LAUNCHD_LABEL}</string>
  <key>ProgramArguments</key>
  <array>
    <string>{binary}</string>
    <string>serve</string>
    <string>--data-dir</string>
    <string>{data}</string>
    <string>--log-format</string>
    <string>json</string>
  </array>
  <key>RunAtLoad</key><true/>
  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>
  <key>ThrottleInterval</key><integer>2</integer>
  <key>Umask</key><integer>63</integer>
  <key>StandardOutPath</key><string>{out}</string>
  <key>StandardErrorPath</key><string>{err}</string>
</dict>
</plist>
"#,
        binary = xml_escape(&spec.binary.to_string_lossy()),
        data = xml_escape(&spec.data_dir.to_string_lossy()),
        out = xml_escape(&logs.join("engram.out.log").to_string_lossy()),
        err = xml_escape(&logs.join("engram.log").to_string_lossy()),
    )
}

/// Runs one service-manager command, naming it in the error when it fails.
fn manager(program: &str, args: &[&str]) -> anyhow::Result<String> {
    let shown = format!("{program} {}", args.join(" "));
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| anyhow::anyhow!("`{shown}` could not run: {e}"))?;
    if !output.status.success() {
        anyhow::bail!(
            "`{shown}` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// Writes `text` to `path` (creating its directory), replacing what was there.
fn write_definition(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

fn home() -> anyhow::Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| anyhow::anyhow!("HOME is not set: cannot tell where the service goes"))
}

#[cfg(target_os = "linux")]
mod platform {
    use super::*;

    /// `$XDG_CONFIG_HOME/systemd/user/engram.service`, else under `~/.config`.
    pub fn unit_path() -> anyhow::Result<PathBuf> {
        let config = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => home()?.join(".config"),
        };
        Ok(config.join("systemd/user").join(SYSTEMD_UNIT))
    }

    pub fn run(spec: &ServiceSpec, command: ServiceCommand) -> anyhow::Result<ExitCode> {
        let path = unit_path()?;
        match command {
            ServiceCommand::Install { no_start } => {
                write_definition(&path, &systemd_unit(spec))?;
                println!("wrote {}", path.display());
                if no_start {
                    println!(
                        "start it with: systemctl --user daemon-reload && systemctl --user enable --now {SYSTEMD_UNIT}"
                    );
                    return Ok(ExitCode::SUCCESS);
                }
                let enabled = manager("systemctl", &["--user", "daemon-reload"]).and_then(|_| {
                    manager("systemctl", &["--user", "enable", "--now", SYSTEMD_UNIT])
                });
                if let Err(e) = enabled {
                    anyhow::bail!(
                        "{e}\nthe unit is written; once a user session bus runs, start it with: systemctl --user daemon-reload && systemctl --user enable --now {SYSTEMD_UNIT}"
                    );
                }
                println!(
                    "enabled and started {SYSTEMD_UNIT}: it starts with your session and restarts on failure; logs: journalctl --user -u engram"
                );
                println!(
                    "to keep it running while you are logged out: loginctl enable-linger $USER"
                );
                Ok(ExitCode::SUCCESS)
            }
            ServiceCommand::Uninstall => {
                if !path.exists() {
                    println!("{} is not there: nothing to remove", path.display());
                    return Ok(ExitCode::SUCCESS);
                }
                // Stopping may fail where no session bus runs; the file goes regardless.
                let stopped = manager("systemctl", &["--user", "disable", "--now", SYSTEMD_UNIT]);
                std::fs::remove_file(&path)
                    .map_err(|e| anyhow::anyhow!("cannot remove {}: {e}", path.display()))?;
                println!("removed {}", path.display());
                let reloaded = manager("systemctl", &["--user", "daemon-reload"]);
                if let Err(e) = stopped.and(reloaded) {
                    anyhow::bail!("{e}\nthe unit file is removed; stop a running daemon by hand");
                }
                println!("stopped and disabled {SYSTEMD_UNIT}");
                Ok(ExitCode::SUCCESS)
            }
            ServiceCommand::Status => {
                if !path.exists() {
                    println!("not installed ({} is not there)", path.display());
                    println!("install it with: engram service install");
                    return Ok(ExitCode::from(1));
                }
                println!("unit: {}", path.display());
                // `is-enabled` and `is-active` print the state and exit non-zero when it
                // is not enabled/active: the printed state is the answer either way.
                for query in ["is-enabled", "is-active"] {
                    let state = Command::new("systemctl")
                        .args(["--user", query, SYSTEMD_UNIT])
                        .output()
                        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                        .unwrap_or_else(|e| format!("unknown (systemctl: {e})"));
                    let state = if state.is_empty() {
                        "unknown".into()
                    } else {
                        state
                    };
                    println!("{}: {state}", query.trim_start_matches("is-"));
                }
                Ok(ExitCode::SUCCESS)
            }
        }
    }
}

#[cfg(target_os = "macos")]
mod platform {
    use super::*;

    pub fn plist_path() -> anyhow::Result<PathBuf> {
        Ok(home()?
            .join("Library/LaunchAgents")
            .join(format!("{LAUNCHD_LABEL}.plist")))
    }

    fn domain() -> String {
        // SAFETY: getuid has no preconditions and cannot fail.
        format!("gui/{}", unsafe { libc::getuid() })
    }

    pub fn run(spec: &ServiceSpec, command: ServiceCommand) -> anyhow::Result<ExitCode> {
        let path = plist_path()?;
        let shown = path.to_string_lossy().to_string();
        match command {
            ServiceCommand::Install { no_start } => {
                std::fs::create_dir_all(spec.data_dir.join("logs"))?;
                write_definition(&path, &launchd_plist(spec))?;
                println!("wrote {shown}");
                if no_start {
                    println!("start it with: launchctl bootstrap {} {shown}", domain());
                    return Ok(ExitCode::SUCCESS);
                }
                // A loaded agent must be booted out before it is loaded again.
                let _ = manager("launchctl", &["bootout", &domain(), &shown]);
                manager("launchctl", &["bootstrap", &domain(), &shown])?;
                println!(
                    "loaded {LAUNCHD_LABEL}: it starts at login and restarts on failure; logs: {}",
                    spec.data_dir.join("logs").display()
                );
                Ok(ExitCode::SUCCESS)
            }
            ServiceCommand::Uninstall => {
                if !path.exists() {
                    println!("{shown} is not there: nothing to remove");
                    return Ok(ExitCode::SUCCESS);
                }
                let _ = manager("launchctl", &["bootout", &domain(), &shown]);
                std::fs::remove_file(&path)?;
                println!("unloaded {LAUNCHD_LABEL} and removed {shown}");
                Ok(ExitCode::SUCCESS)
            }
            ServiceCommand::Status => {
                if !path.exists() {
                    println!("not installed ({shown} is not there)");
                    return Ok(ExitCode::from(1));
                }
                println!("agent: {shown}");
                let target = format!("{}/{LAUNCHD_LABEL}", domain());
                match manager("launchctl", &["print", &target]) {
                    Ok(_) => println!("loaded: yes"),
                    Err(_) => println!("loaded: no"),
                }
                Ok(ExitCode::SUCCESS)
            }
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod platform {
    use super::*;

    pub fn run(spec: &ServiceSpec, _command: ServiceCommand) -> anyhow::Result<ExitCode> {
        eprintln!(
            "engram service works with systemd (Linux) and launchd (macOS). On Windows, run Engram at logon with the Task Scheduler:\n  schtasks /Create /SC ONLOGON /TN Engram /TR \"\\\"{}\\\" serve --data-dir \\\"{}\\\"\"\nand remove it with: schtasks /Delete /TN Engram",
            spec.binary.display(),
            spec.data_dir.display()
        );
        Ok(ExitCode::from(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_start_quotes_what_systemd_would_expand() {
        let spec = ServiceSpec {
            binary: PathBuf::from("/opt/my tools/engram"),
            data_dir: PathBuf::from("/home/a/100% \"data\"/$HOME\\x"),
        };
        let unit = systemd_unit(&spec);
        assert!(
            unit.contains(
                "ExecStart=\"/opt/my tools/engram\" serve --data-dir \"/home/a/100%% \\\"data\\\"/$$HOME\\\\x\" --log-format json"
            ),
            "{unit}"
        );
        assert!(unit.contains("Restart=on-failure"));
        assert!(unit.contains("WantedBy=default.target"));
    }

    #[test]
    fn the_launchd_agent_escapes_paths_as_xml() {
        let spec = ServiceSpec {
            binary: PathBuf::from("/Applications/a&b/engram"),
            data_dir: PathBuf::from("/Users/x/<data>"),
        };
        let plist = launchd_plist(&spec);
        assert!(plist.contains("<string>/Applications/a&amp;b/engram</string>"));
        assert!(plist.contains("<string>/Users/x/&lt;data&gt;</string>"));
        assert!(plist.contains("<key>SuccessfulExit</key><false/>"));
    }
}
