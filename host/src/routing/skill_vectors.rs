//! The skills' vectors from the installed sentence encoder, for routing by meaning:
//! each skill's [`RoutableSkill::meaning_text`] embedded once, then kept in memory and
//! on disk under `{data_dir}/cache/skill-vectors/<model>/<sha256 of the text>`, so that
//! a restart, or a router rebuilt after an install, embeds only what is new.
//!
//! `<model>` is the model's name and a hash of its vector of a fixed sentence: a model
//! installed again under the same name with other weights starts a new cache. A
//! cached file is used only if it holds a unit vector of the model's length; anything
//! else (a torn write, another model's vector) is embedded again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::{EncodedSkills, RoutableSkill};
use crate::embed::encoder::Encoder;

/// The encoder's vectors of skills, cached.
pub struct SkillVectors {
    encoder: Arc<Encoder>,
    dir: PathBuf,
    memo: Mutex<HashMap<[u8; 32], Arc<Vec<f32>>>>,
}

impl SkillVectors {
    /// `cache_root` is `{data_dir}/cache/skill-vectors`.
    pub fn new(encoder: Arc<Encoder>, name: &str, cache_root: &Path) -> Self {
        // New weights under the same name give another version, so another cache.
        let version = encoder.version();
        SkillVectors {
            encoder,
            dir: cache_root.join(format!("{name}-{version}")),
            memo: Mutex::new(HashMap::new()),
        }
    }

    pub fn encoder(&self) -> &Arc<Encoder> {
        &self.encoder
    }

    /// Every skill's vector, embedding (in one batch) those neither in memory nor on
    /// disk. A skill the encoder fails on is left out, with a warning: it is routed by
    /// its words alone. Only these skills' vectors stay in memory: the skills removed
    /// or edited since the last call are read from disk again if they come back.
    pub fn for_skills(&self, skills: &[RoutableSkill]) -> EncodedSkills {
        let texts: Vec<String> = skills.iter().map(RoutableSkill::meaning_text).collect();
        let keys = keys_of(&texts);
        let vectors = self.vectors(&texts, &keys);
        let current: std::collections::HashSet<&[u8; 32]> = keys.iter().collect();
        self.memo
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|key, _| current.contains(key));
        EncodedSkills {
            dims: self.encoder.dims(),
            by_slug: skills
                .iter()
                .zip(vectors)
                .filter_map(|(skill, v)| Some((skill.slug.clone(), v?.as_ref().clone())))
                .collect(),
        }
    }

    /// The vector of each text, cached as a skill's is (`None` for one the encoder
    /// failed on).
    pub fn for_texts<S: AsRef<str>>(&self, texts: &[S]) -> Vec<Option<Arc<Vec<f32>>>> {
        self.vectors(texts, &keys_of(texts))
    }

    fn vectors<S: AsRef<str>>(&self, texts: &[S], keys: &[[u8; 32]]) -> Vec<Option<Arc<Vec<f32>>>> {
        let dims = self.encoder.dims();
        let mut memo = self.memo.lock().unwrap_or_else(|p| p.into_inner());
        let mut missing: Vec<(&str, [u8; 32])> = Vec::new();
        for (text, key) in texts.iter().zip(keys) {
            if memo.contains_key(key) {
                continue;
            }
            match self.read(key, dims) {
                Some(vector) => {
                    memo.insert(*key, Arc::new(vector));
                }
                None => missing.push((text.as_ref(), *key)),
            }
        }
        missing.sort_unstable_by_key(|(_, key)| *key);
        missing.dedup_by_key(|(_, key)| *key);
        if !missing.is_empty() {
            let batch: Vec<&str> = missing.iter().map(|(text, _)| *text).collect();
            match self.encoder.embed_batch(&batch) {
                Ok(vectors) => {
                    for ((_, key), vector) in missing.iter().zip(vectors) {
                        self.write(key, &vector);
                        memo.insert(*key, Arc::new(vector));
                    }
                }
                Err(e) => tracing::warn!(
                    "routing by meaning: {} texts could not be embedded ({e}); they are routed by their words",
                    batch.len()
                ),
            }
        }
        keys.iter().map(|key| memo.get(key).cloned()).collect()
    }

    #[cfg(test)]
    fn in_memory(&self) -> usize {
        self.memo.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    fn path(&self, key: &[u8; 32]) -> PathBuf {
        self.dir.join(hex::encode(key))
    }

    fn read(&self, key: &[u8; 32], dims: usize) -> Option<Vec<f32>> {
        let bytes = std::fs::read(self.path(key)).ok()?;
        if bytes.len() != dims * 4 {
            return None;
        }
        let vector: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let norm: f32 = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        ((norm - 1.0).abs() < 1e-3).then_some(vector)
    }

    /// Best effort: a cache that cannot be written costs an embedding at the next
    /// start, nothing else.
    fn write(&self, key: &[u8; 32], vector: &[f32]) {
        let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
        let path = self.path(key);
        let result = std::fs::create_dir_all(&self.dir).and_then(|()| {
            let temp = self.dir.join(format!(".{}.tmp", hex::encode(key)));
            std::fs::write(&temp, &bytes).and_then(|()| std::fs::rename(&temp, &path))
        });
        if let Err(e) = result {
            tracing::debug!("skill vector cache {}: {e}", path.display());
        }
    }
}

fn keys_of<S: AsRef<str>>(texts: &[S]) -> Vec<[u8; 32]> {
    texts
        .iter()
        .map(|t| Sha256::digest(t.as_ref().as_bytes()).into())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::tiny_bert;
    use crate::test_rng::Rng;

    fn skill(slug: &str, description: &str) -> RoutableSkill {
        RoutableSkill {
            slug: slug.into(),
            name: slug.into(),
            description: description.into(),
            active: true,
            ..RoutableSkill::default()
        }
    }

    /// A batch pads its texts to the longest: the same text's vector may differ from
    /// its vector alone in the last bits.
    fn assert_close(a: &[f32], b: &[f32]) {
        let cos: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        assert!(cos > 1.0 - 1e-5, "cosine {cos}");
    }

    fn cached(dir: &Path) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        files.sort();
        files
    }

    #[test]
    fn each_skill_is_embedded_once_and_read_back_from_disk_after_a_restart() {
        let model = tempfile::tempdir().expect("model dir");
        let mut rng = Rng(29);
        tiny_bert::write(model.path(), &mut || rng.next());
        let encoder = Arc::new(Encoder::load(model.path()).expect("tiny model"));
        let cache = tempfile::tempdir().expect("cache dir");
        let skills = [
            skill("weather", "will it rain tomorrow"),
            skill("cats", "the cat sat on the mat"),
            // The same text as `cats`: one vector, one file.
            skill("cats", "the cat sat on the mat"),
        ];

        let first = SkillVectors::new(encoder.clone(), "tiny", cache.path());
        let encoded = first.for_skills(&skills);
        assert_eq!(encoded.dims, tiny_bert::HIDDEN);
        assert_eq!(encoded.by_slug.len(), 2);
        let alone = encoder.embed(&skills[0].meaning_text()).expect("embed");
        assert_close(&encoded.by_slug["weather"], &alone);
        let dirs = cached(cache.path());
        assert_eq!(dirs.len(), 1, "one directory for the model: {dirs:?}");
        let files = cached(&dirs[0]);
        assert_eq!(files.len(), 2, "{files:?}");

        // A restart reads the files; one torn by a crash is embedded again and
        // rewritten.
        std::fs::write(&files[0], [0u8; 7]).expect("tear a file");
        let again = SkillVectors::new(encoder, "tiny", cache.path());
        let read_back = again.for_skills(&skills).by_slug;
        assert_eq!(read_back.len(), 2);
        for (slug, vector) in &read_back {
            assert_close(vector, &encoded.by_slug[slug]);
        }
        assert_eq!(
            std::fs::metadata(&files[0]).expect("rewritten").len(),
            (tiny_bert::HIDDEN * 4) as u64
        );

        // Memory holds the current skills' vectors only: a skill edited away leaves
        // it, and comes back from disk unchanged.
        assert_eq!(again.in_memory(), 2);
        let edited = [skill("weather", "will it snow tomorrow")];
        again.for_skills(&edited);
        assert_eq!(again.in_memory(), 1);
        let back = again.for_skills(&skills[..1]).by_slug;
        assert_close(&back["weather"], &encoded.by_slug["weather"]);
        assert_eq!(again.in_memory(), 1);
    }

    #[test]
    fn another_version_of_the_model_under_the_same_name_starts_a_new_cache() {
        let model = tempfile::tempdir().expect("model dir");
        let mut rng = Rng(7);
        tiny_bert::write(model.path(), &mut || rng.next());
        let cache = tempfile::tempdir().expect("cache dir");
        let skills = [skill("weather", "will it rain tomorrow")];
        let load = || Arc::new(Encoder::load(model.path()).expect("tiny model"));
        let old = SkillVectors::new(load(), "tiny", cache.path()).for_skills(&skills);

        // New weights, same name: the old vectors must not be served for them.
        let mut rng = Rng(8);
        let weights = tiny_bert::safetensors(&tiny_bert::tensors(&mut || rng.next()));
        std::fs::write(model.path().join("model.safetensors"), weights).expect("new weights");
        let encoder = load();
        let new = SkillVectors::new(encoder.clone(), "tiny", cache.path()).for_skills(&skills);
        assert_ne!(new.by_slug, old.by_slug);
        let alone = encoder.embed(&skills[0].meaning_text()).expect("embed");
        assert_close(&new.by_slug["weather"], &alone);
        assert_eq!(cached(cache.path()).len(), 2);
    }
}
