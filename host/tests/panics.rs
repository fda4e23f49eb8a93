//! Debug builds keep line tables for Engram's own code (Cargo.toml, `[profile.dev]`),
//! so a backtrace of a panic names the file and line it came from. Release builds drop
//! them for size; this checks only the profile `cargo test` builds with.

#[test]
fn a_debug_backtrace_names_file_and_line() {
    if cfg!(not(debug_assertions)) {
        eprintln!("skipped: not a debug build");
        return;
    }
    let backtrace = std::backtrace::Backtrace::force_capture().to_string();
    assert!(
        backtrace.contains("tests/panics.rs:"),
        "no `tests/panics.rs:<line>` in the backtrace:\n{backtrace}"
    );
}
