//! The one shared wasmtime `Engine`: epoch interruption driven by a ticker thread, no
//! component-model concurrency, and the pooling allocator when the address space
//! allows it.

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::error::PluginError;
use super::manifest::MAX_MEMORY_MIB;

/// How often the epoch advances; deadlines are counted in these ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Instances the pool keeps slots for; a call beyond that waits for no one: it fails
/// with a runtime error, which the strategy layer treats like any plugin failure.
const POOL_INSTANCES: u32 = 64;

pub struct SharedEngine {
    pub engine: Engine,
    pub pooled: bool,
    /// sha256 over wasmtime's precompile compatibility hash: a cached artifact is only
    /// reused by an engine with the same fingerprint.
    pub fingerprint: String,
    ticker: EpochTicker,
}

impl SharedEngine {
    pub fn new() -> Result<SharedEngine, PluginError> {
        let (engine, pooled) = match Engine::new(&config(true)) {
            Ok(engine) => (engine, true),
            Err(pool_error) => {
                tracing::info!(
                    "pooling allocator unavailable ({pool_error}); using on-demand allocation"
                );
                let engine = Engine::new(&config(false))
                    .map_err(|e| PluginError::Runtime(format!("cannot create engine: {e}")))?;
                (engine, false)
            }
        };
        let fingerprint = fingerprint(&engine);
        let ticker = EpochTicker::start(engine.clone());
        Ok(SharedEngine {
            engine,
            pooled,
            fingerprint,
            ticker,
        })
    }

    /// Deadline in epoch ticks for a timeout; one extra tick because the current tick
    /// may be about to end.
    pub fn deadline_ticks(timeout: Duration) -> u64 {
        (timeout.as_millis() as u64).div_ceil(EPOCH_TICK.as_millis() as u64) + 1
    }

    pub fn ticker_running(&self) -> bool {
        self.ticker
            .handle
            .as_ref()
            .is_some_and(|h| !h.is_finished())
    }
}

fn config(pooling: bool) -> Config {
    let mut config = Config::new();
    config.epoch_interruption(true);
    config.concurrency_support(false);
    config.wasm_component_model(true);
    config.max_wasm_stack(1 << 20);
    if pooling {
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(POOL_INSTANCES)
            .total_core_instances(POOL_INSTANCES * 4)
            .total_memories(POOL_INSTANCES * 2)
            .total_tables(POOL_INSTANCES * 4)
            .total_stacks(POOL_INSTANCES)
            .max_memory_size((MAX_MEMORY_MIB as usize) << 20);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        // Pooling also needs the memory reservation to cover the largest memory a
        // plugin may be granted.
        config.memory_reservation(MAX_MEMORY_MIB << 20);
    }
    config
}

fn fingerprint(engine: &Engine) -> String {
    struct ShaHasher(Sha256);
    impl Hasher for ShaHasher {
        fn finish(&self) -> u64 {
            0
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
    }
    let mut hasher = ShaHasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hasher.0.update(env!("CARGO_PKG_VERSION").as_bytes());
    hex::encode(hasher.0.finalize())[..16].to_string()
}

/// Advances the engine's epoch every [`EPOCH_TICK`] until dropped.
struct EpochTicker {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl EpochTicker {
    fn start(engine: Engine) -> EpochTicker {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("engram-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            })
            .ok();
        EpochTicker { stop, handle }
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}
