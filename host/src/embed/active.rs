//! Which sentence encoder serves: the installed model `embed.model` names in
//! config.yaml, else the one model installed if there is exactly one, else none; and
//! with none, or with one that fails to load, the static table ([`super::embeddings`])
//! as before, with the reason kept for `/healthz` and `GET /api/brain/status`.
//!
//! Loading takes a tenth of a second and a hundred megabytes, so it happens once, on
//! first use: `engram serve` asks at start (and logs the outcome), while the commands
//! that never embed do not pay for it. A change of `embed.model` applies at the next
//! start.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use serde::Serialize;

use super::encoder::Encoder;
use super::models::{Models, STATIC};

/// What `/healthz` and `GET /api/brain/status` say of the encoder.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct EncoderStatus {
    /// The encoder in use: `static` (the word-vector table compiled in) or the name of
    /// the installed model under `{data_dir}/models/`.
    pub name: String,
    /// Why the configured or installed model is not in use, if one is not.
    pub error: Option<String>,
}

struct Loaded {
    encoder: Option<Arc<Encoder>>,
    status: EncoderStatus,
}

/// The encoder chosen for a data directory, loaded on first use.
pub struct ActiveEncoder {
    models: Models,
    configured: Option<String>,
    loaded: OnceLock<Loaded>,
}

impl ActiveEncoder {
    /// `configured` is `embed.model` from config.yaml, if set.
    pub fn new(models: Models, configured: Option<String>) -> ActiveEncoder {
        ActiveEncoder {
            models,
            configured,
            loaded: OnceLock::new(),
        }
    }

    /// The model's encoder, `None` when the static table serves.
    pub fn encoder(&self) -> Option<Arc<Encoder>> {
        self.loaded().encoder.clone()
    }

    pub fn status(&self) -> EncoderStatus {
        self.loaded().status.clone()
    }

    fn loaded(&self) -> &Loaded {
        self.loaded.get_or_init(|| self.load())
    }

    fn load(&self) -> Loaded {
        let fallback = |error: Option<String>| {
            match &error {
                Some(error) => tracing::warn!(
                    "sentence encoder: the static word-vector table, because {error}"
                ),
                None => tracing::info!(
                    "sentence encoder: the static word-vector table (no model installed; `engram models pull all-minilm-l6-v2` installs one)"
                ),
            }
            Loaded {
                encoder: None,
                status: EncoderStatus {
                    name: STATIC.to_string(),
                    error,
                },
            }
        };
        let name = match self.configured.as_deref() {
            Some(STATIC) => {
                tracing::info!(
                    "sentence encoder: the static word-vector table (embed.model: static)"
                );
                return Loaded {
                    encoder: None,
                    status: EncoderStatus {
                        name: STATIC.to_string(),
                        error: None,
                    },
                };
            }
            Some(name) => name.to_string(),
            None => {
                let names = self.models.names();
                match names.as_slice() {
                    [] => return fallback(None),
                    [one] => one.clone(),
                    several => {
                        return fallback(Some(format!(
                            "{} models are installed ({}) and embed.model in config.yaml names none of them",
                            several.len(),
                            several.join(", ")
                        )));
                    }
                }
            }
        };
        let started = Instant::now();
        let dir = match self.models.model_dir(&name) {
            Ok(dir) => dir,
            Err(e) => return fallback(Some(format!("embed.model: {e}"))),
        };
        match load_guarded(&dir) {
            Ok(encoder) => {
                tracing::info!(
                    "sentence encoder: model {name} ({} dimensions, at most {} tokens), loaded in {} ms",
                    encoder.dims(),
                    encoder.max_tokens(),
                    started.elapsed().as_millis()
                );
                Loaded {
                    encoder: Some(Arc::new(encoder)),
                    status: EncoderStatus { name, error: None },
                }
            }
            Err(reason) => fallback(Some(format!("model {name} failed to load: {reason}"))),
        }
    }
}

/// [`Encoder::load`], with a panic in a dependency reading a hostile file turned into
/// an error: a bad model never stops the daemon.
fn load_guarded(dir: &Path) -> Result<Encoder, String> {
    match std::panic::catch_unwind(|| Encoder::load(dir)) {
        Ok(result) => result.map_err(|e| e.to_string()),
        Err(_) => Err(format!("{}: reading it panicked", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::rng::Rng;
    use crate::embed::tiny_bert;

    fn models_with(names: &[&str]) -> (tempfile::TempDir, Models) {
        let data = tempfile::tempdir().unwrap();
        let models = Models::new(data.path().join("models"));
        for (i, name) in names.iter().enumerate() {
            let mut rng = Rng(20 + i as u64);
            tiny_bert::write(&models.dir().join(name), &mut || rng.next());
        }
        (data, models)
    }

    fn status(models: Models, configured: Option<&str>) -> (EncoderStatus, bool) {
        let active = ActiveEncoder::new(models, configured.map(str::to_string));
        (active.status(), active.encoder().is_some())
    }

    #[test]
    fn the_one_installed_model_serves_else_the_static_table_says_why() {
        let (_d, models) = models_with(&[]);
        let (s, model) = status(models, None);
        assert_eq!((s.name.as_str(), s.error, model), ("static", None, false));

        let (_d, models) = models_with(&["tiny"]);
        let (s, model) = status(models, None);
        assert_eq!((s.name.as_str(), s.error, model), ("tiny", None, true));

        let (_d, models) = models_with(&["tiny"]);
        let (s, model) = status(models, Some("static"));
        assert_eq!((s.name.as_str(), s.error, model), ("static", None, false));

        let (_d, models) = models_with(&["one", "two"]);
        let (s, model) = status(models, None);
        assert_eq!((s.name.as_str(), model), ("static", false));
        assert!(s.error.unwrap().contains("embed.model"));

        let (_d, models) = models_with(&["one", "two"]);
        let (s, model) = status(models, Some("two"));
        assert_eq!((s.name.as_str(), s.error, model), ("two", None, true));

        let (_d, models) = models_with(&["tiny"]);
        let (s, model) = status(models, Some("other"));
        assert_eq!((s.name.as_str(), model), ("static", false));
        assert!(s.error.unwrap().contains("other"));
    }

    #[test]
    fn a_model_that_fails_to_load_leaves_the_static_table_and_the_reason() {
        let (_d, models) = models_with(&["tiny"]);
        let weights = models
            .dir()
            .join("tiny")
            .join(crate::embed::encoder::WEIGHTS);
        let bytes = std::fs::read(&weights).unwrap();
        std::fs::write(&weights, &bytes[..bytes.len() - 8]).unwrap();
        let (s, model) = status(models, None);
        assert_eq!((s.name.as_str(), model), ("static", false));
        let error = s.error.unwrap();
        assert!(
            error.contains("tiny") && error.contains("model.safetensors"),
            "{error}"
        );
    }
}
