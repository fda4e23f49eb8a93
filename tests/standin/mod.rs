//! Stand-ins for the outside services Engram's chat talks to, which cannot exist on
//! this machine (it has no network): an OpenAI-compatible model endpoint and the
//! Telegram Bot API. Each is a real HTTP server on loopback, speaking the service's
//! protocol, recording every request, answering what the test scripts. Everything on
//! Engram's side of the wire is the real thing.

#[path = "../../host/tests/support/http.rs"]
pub mod http;
#[path = "../../host/tests/support/openai.rs"]
pub mod openai;
pub mod telegram;
