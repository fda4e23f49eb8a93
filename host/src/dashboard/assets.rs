//! The dashboard's files, compiled into the binary so that `engram serve` needs
//! nothing beside it. They live in `host/dashboard/`: plain HTML, CSS and ES modules,
//! edited and shipped as they are (no build step).

pub struct Asset {
    pub content_type: &'static str,
    pub body: &'static str,
}

/// The page shell: `{{title}}`, `{{module}}` and `{{registry}}` are filled in per page.
pub const SHELL: &str = include_str!("../../dashboard/shell.html");
/// The login page: `{{next}}` and `{{error}}` are filled in.
pub const LOGIN: &str = include_str!("../../dashboard/login.html");
/// The answer to a successful login: `{{secret}}` (the session's, for the page) and
/// `{{next}}` are filled in; `login.js` stores the one and goes to the other.
pub const SIGNED_IN: &str = include_str!("../../dashboard/signed-in.html");

/// Changes with every release, so a browser revalidating an asset gets the new one.
pub const ETAG: &str = concat!("\"engram-", env!("CARGO_PKG_VERSION"), "\"");

macro_rules! assets {
    ($($name:literal => $content_type:literal),* $(,)?) => {
        /// The file `/assets/<path>` names, if the dashboard has one.
        pub fn find(path: &str) -> Option<Asset> {
            match path {
                $($name => Some(Asset {
                    content_type: $content_type,
                    body: include_str!(concat!("../../dashboard/", $name)),
                }),)*
                _ => None,
            }
        }
    };
}

assets! {
    "app.css" => "text/css; charset=utf-8",
    "favicon.svg" => "image/svg+xml",
    "api.js" => "text/javascript; charset=utf-8",
    "login.js" => "text/javascript; charset=utf-8",
    "ui.js" => "text/javascript; charset=utf-8",
    "header.js" => "text/javascript; charset=utf-8",
    "memory-item.js" => "text/javascript; charset=utf-8",
    "said-item.js" => "text/javascript; charset=utf-8",
    "pages/memory.js" => "text/javascript; charset=utf-8",
    "pages/persons.js" => "text/javascript; charset=utf-8",
    "pages/person.js" => "text/javascript; charset=utf-8",
    "pages/goals.js" => "text/javascript; charset=utf-8",
    "pages/graph.js" => "text/javascript; charset=utf-8",
    "pages/skills.js" => "text/javascript; charset=utf-8",
    "force-layout.js" => "text/javascript; charset=utf-8",
}
