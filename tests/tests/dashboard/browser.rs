//! The browser the dashboard tests drive: Debian's `chromium`, headless, through
//! `chromedriver` (WebDriver) with fantoccini, against a real `engram serve`.
//!
//! The tests that drive it are `#[ignore]` where `tests/build.rs` found no Chromium or
//! ChromeDriver (never under CI, `CI` set), so a run without them counts them as not
//! run; where they run, a missing browser fails them.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use engram_e2e::{Daemon, OPERATOR_TOKEN, engram};
use fantoccini::elements::Element;
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// How long a test waits for the page to show something before failing.
const PATIENCE: Duration = Duration::from_secs(20);

/// The two widths every page must work at.
pub const WIDTHS: [u32; 2] = [1280, 390];

fn find_binary(env: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(env) {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    })
}

/// A free loopback port for chromedriver, which cannot be told to pick one.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A daemon, a chromedriver and a logged-in headless Chromium session.
pub struct Browser {
    pub client: Client,
    pub daemon: Daemon,
    pub data: tempfile::TempDir,
    driver: Child,
}

impl Browser {
    /// Starts everything over a fresh data directory written by `prepare` (a
    /// config.yaml, say), logs in through the login page.
    pub async fn start(test: &str, prepare: impl FnOnce(&Path)) -> Browser {
        let chromium = find_binary(
            "ENGRAM_CHROMIUM",
            &["chromium", "chromium-browser", "google-chrome"],
        );
        let driver = find_binary("ENGRAM_CHROMEDRIVER", &["chromedriver"]);
        let (Some(chromium), Some(driver)) = (chromium, driver) else {
            panic!(
                "{test}: chromium and chromedriver are required (Debian's chromium and chromium-driver, which .ci/run installs, or ENGRAM_CHROMIUM / ENGRAM_CHROMEDRIVER); where they are missing, `touch tests/build.rs` marks the browser tests ignored"
            );
        };
        let data = tempfile::tempdir().expect("tempdir");
        prepare(data.path());
        let daemon = Daemon::start(&mut engram(data.path()));

        let port = free_port();
        // Its own process group, which the browser it starts joins: Drop ends them all.
        let driver = Command::new(driver)
            .process_group(0)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let webdriver = format!("http://127.0.0.1:{port}");
        let profile = data.path().join("chromium-profile");
        let capabilities = json!({
            "browserName": "chrome",
            "goog:loggingPrefs": { "browser": "ALL" },
            "goog:chromeOptions": {
                "binary": chromium,
                // As root (CI) Chromium needs --no-sandbox. The background-networking
                // flags keep it from calling out of a machine with no network.
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--disable-quic", "--no-first-run",
                    "--disable-default-apps", "--disable-extensions",
                    "--window-size=1280,900",
                    format!("--user-data-dir={}", profile.display()),
                ],
            },
        });
        let capabilities = match capabilities {
            Value::Object(map) => map,
            _ => unreachable!("capabilities are an object"),
        };
        let deadline = Instant::now() + PATIENCE;
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(capabilities.clone())
                .connect(&webdriver)
                .await
            {
                Ok(client) => break client,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("{test}: cannot start a chromium session: {e}"),
            }
        };
        let browser = Browser {
            client,
            daemon,
            data,
            driver,
        };
        browser.log_in().await;
        browser
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.daemon.url())
    }

    async fn log_in(&self) {
        self.client
            .goto(&self.url("/login"))
            .await
            .expect("open the login page");
        self.fill("#token", OPERATOR_TOKEN).await;
        self.click("form button[type=submit]").await;
        self.wait_for("#brain-status[data-learning]").await;
    }

    /// Opens `path` and waits until the header has loaded the brain's status.
    pub async fn open(&self, path: &str) {
        self.client.goto(&self.url(path)).await.expect("navigate");
        self.wait_for("#brain-status[data-learning]").await;
    }

    pub async fn set_width(&self, width: u32) {
        self.client
            .set_window_size(width, 900)
            .await
            .expect("resize the window");
    }

    /// The first element matching `css`, waiting for it to appear. A lookup that
    /// fails is tried again until the deadline, whatever the error: one sent while a
    /// form's submission navigates is "aborted by navigation", not "no such element".
    pub async fn wait_for(&self, css: &str) -> Element {
        let deadline = Instant::now() + PATIENCE;
        loop {
            match self.client.find(Locator::Css(css)).await {
                Ok(element) => return element,
                Err(e) if Instant::now() >= deadline => {
                    panic!("no `{css}` on {}: {e}", self.current_path().await)
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// Waits until the element matching `css` contains `text`.
    pub async fn wait_for_text(&self, css: &str, text: &str) -> Element {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Ok(element) = self.client.find(Locator::Css(css)).await
                && element.text().await.is_ok_and(|t| t.contains(text))
            {
                return element;
            }
            assert!(
                Instant::now() < deadline,
                "`{css}` never showed “{text}” on {}",
                self.current_path().await
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until `script` (a function body returning a value) returns true.
    pub async fn wait_until(&self, what: &str, script: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let done = self.client.execute(script, vec![]).await;
            if matches!(done, Ok(Value::Bool(true))) {
                return;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Every element matching `css`, now.
    pub async fn all(&self, css: &str) -> Vec<Element> {
        self.client
            .find_all(Locator::Css(css))
            .await
            .expect("find elements")
    }

    pub async fn texts(&self, css: &str) -> Vec<String> {
        let mut texts = Vec::new();
        for element in self.all(css).await {
            texts.push(element.text().await.unwrap_or_default());
        }
        texts
    }

    pub async fn click(&self, css: &str) {
        self.wait_for(css).await.click().await.expect("click");
    }

    /// Clears the field matching `css` and types `text` into it.
    pub async fn fill(&self, css: &str, text: &str) {
        let input = self.wait_for(css).await;
        input.clear().await.expect("clear");
        input.send_keys(text).await.expect("type");
    }

    /// Chooses the option with `value` in the `<select>` matching `css`.
    pub async fn choose(&self, css: &str, value: &str) {
        self.wait_for(css)
            .await
            .select_by_value(value)
            .await
            .unwrap_or_else(|e| panic!("choose {value} in {css}: {e}"));
    }

    async fn current_path(&self) -> String {
        self.client
            .current_url()
            .await
            .map(|u| u.path().to_string())
            .unwrap_or_default()
    }

    /// The browser console's errors since the last call (chromedriver's log, which
    /// also has failed loads and uncaught exceptions, not just `console.error`).
    pub async fn console_errors(&self) -> Vec<String> {
        let log = self
            .client
            .issue_cmd(BrowserLog)
            .await
            .expect("read the browser log");
        log.as_array()
            .into_iter()
            .flatten()
            .filter(|entry| entry["level"] == "SEVERE")
            .map(|entry| entry["message"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    pub async fn assert_no_console_errors(&self, context: &str) {
        let errors = self.console_errors().await;
        assert!(
            errors.is_empty(),
            "{context}: the console has errors: {errors:#?}"
        );
    }

    /// Saves a PNG of the window as target/screenshots/<name>.png.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.client.screenshot().await.expect("screenshot");
        let dir = screenshots_dir();
        std::fs::create_dir_all(&dir).expect("create target/screenshots");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("write the screenshot");
        path
    }

    /// Asserts that the page does not scroll sideways at the current width, then saves
    /// a screenshot as target/screenshots/<name>.png.
    pub async fn assert_fits_and_screenshot(&self, name: &str) {
        let overflow = self
            .client
            .execute(
                "return document.documentElement.scrollWidth > window.innerWidth + 1",
                vec![],
            )
            .await
            .expect("measure the page width");
        assert_eq!(overflow, json!(false), "{name}: the page scrolls sideways");
        self.screenshot(name).await;
    }

    /// Ends the WebDriver session; dropping the browser then stops the processes.
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}

impl Drop for Browser {
    /// Stops chromedriver and every Chromium process it started, also when a test
    /// panics before [`Browser::close`].
    fn drop(&mut self) {
        let group = format!("-{}", self.driver.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.driver.wait();
    }
}

/// `target/screenshots`, beside the binaries cargo built.
pub fn screenshots_dir() -> PathBuf {
    engram_e2e::engram_bin()
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>")
        .join("screenshots")
}

/// chromedriver's log endpoint (`POST /session/{id}/se/log`), which WebDriver proper
/// lacks and fantoccini does not wrap.
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/se/log",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (
            http::Method::POST,
            Some(json!({ "type": "browser" }).to_string()),
        )
    }
}

// Added for the goals and skills tests (additive helper).
