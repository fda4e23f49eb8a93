//! End-to-end tests of the web dashboard in headless Chromium (see `browser.rs`),
//! against a real daemon. One module per page; `pages` loads every page at both
//! widths and writes the screenshots under target/screenshots/.

mod brain_data;
mod browser;
mod goals;
mod graph;
mod memory;
mod pages;
mod persons;
mod session;
mod skills;
