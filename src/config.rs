//! Configuration: `conf/weir.toml`, overridden by command-line flags.

use serde::Deserialize;

/// The whole config file.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct Config {
    pub data_dir: String,
    pub listen: String,
    /// The superuser the first start creates.
    pub superuser: String,
    /// A file holding that superuser's first password (else the environment
    /// variable WEIR_SUPERUSER_PASSWORD; else none).
    pub superuser_password_file: String,
    /// Authentication rules in pg_hba.conf's format; empty: trust on
    /// loopback, reject elsewhere.
    pub hba_file: String,
    /// TLS: the server's certificate chain and private key (PEM); both
    /// empty: no TLS.
    pub ssl_cert_file: String,
    pub ssl_key_file: String,
    /// Prometheus metrics over HTTP (`GET /metrics`), HOST:PORT; empty: off.
    pub metrics_listen: String,
    pub storage: StorageSection,
    pub execution: ExecutionSection,
    /// Streaming mode (flows over `ttl = 'instant'` sources, joins).
    pub stream: crate::stream::StreamTuning,
}

/// Query execution limits.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct ExecutionSection {
    /// Memory one query may hold (hash tables, sorts, buffered rows,
    /// function results); past it the query fails with 53200.
    pub query_memory_bytes_max: usize,
}

impl Default for ExecutionSection {
    fn default() -> Self {
        ExecutionSection { query_memory_bytes_max: crate::exec::memory::QUERY_MEMORY_BYTES_DEFAULT }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct StorageSection {
    /// fsync the WAL before acknowledging a write ("always" or "never").
    pub wal_fsync: String,
    /// A memtable larger than this is flushed.
    pub memtable_bytes_max: usize,
    /// Storage's own options (memtable budget, WAL size, SST layout,
    /// compaction, background thread), read from the same section.
    #[serde(flatten)]
    pub tuning: crate::storage::StorageTuning,
    /// Longest row COPY FROM STDIN accepts (the data itself is parsed and
    /// written in chunks as it arrives).
    pub copy_buffer_bytes_max: usize,
    /// Largest volume of writes one transaction block buffers before
    /// COMMIT; past it the statement fails with 53400.
    pub txn_buffer_bytes_max: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: "weir-data".into(),
            listen: "127.0.0.1:5433".into(),
            superuser: "weir".into(),
            superuser_password_file: String::new(),
            hba_file: String::new(),
            ssl_cert_file: String::new(),
            ssl_key_file: String::new(),
            metrics_listen: String::new(),
            storage: StorageSection::default(),
            execution: ExecutionSection::default(),
            stream: crate::stream::StreamTuning::default(),
        }
    }
}

impl Default for StorageSection {
    fn default() -> Self {
        StorageSection {
            wal_fsync: "always".into(),
            memtable_bytes_max: 64 << 20,
            tuning: crate::storage::StorageTuning::default(),
            copy_buffer_bytes_max: 1 << 30,
            txn_buffer_bytes_max: 256 << 20,
        }
    }
}

impl Config {
    pub fn load(path: &std::path::Path) -> crate::error::Result<Config> {
        let text = std::fs::read_to_string(path)?;
        toml::from_str(&text).map_err(|e| crate::err!(InvalidParameterValue, "invalid config file {}: {e}", path.display()))
    }

    pub fn storage_config(&self) -> crate::storage::StorageConfig {
        crate::storage::StorageConfig { wal_fsync: self.storage.wal_fsync != "never", memtable_bytes_max: self.storage.memtable_bytes_max }
    }

    pub fn storage_tuning(&self) -> crate::storage::StorageTuning {
        self.storage.tuning.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// conf/weir.toml documents every option with its default: keep it so.
    #[test]
    fn shipped_config_is_the_defaults() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("conf/weir.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let file: toml::Value = toml::from_str(&text).unwrap();
        let c = Config::load(&path).unwrap();
        let d = Config::default();
        assert_eq!(format!("{c:?}"), format!("{d:?}"));
        // Every field of [storage] is written out in the file.
        let storage = file.get("storage").and_then(|s| s.as_table()).unwrap();
        for key in [
            "wal_fsync",
            "memtable_bytes_max",
            "global_memtable_bytes_max",
            "wal_bytes_max",
            "sst_row_group_rows_max",
            "sst_verify_crc",
            "compaction_window_ms",
            "compaction_file_bytes_max",
            "compaction_files_min",
            "background_interval_ms",
            "decoded_cache_bytes_max",
            "copy_buffer_bytes_max",
            "txn_buffer_bytes_max",
        ] {
            assert!(storage.contains_key(key), "conf/weir.toml lacks storage.{key}");
        }
        let execution = file.get("execution").and_then(|s| s.as_table()).expect("conf/weir.toml has [execution]");
        assert!(execution.contains_key("query_memory_bytes_max"), "conf/weir.toml lacks execution.query_memory_bytes_max");
        let stream = file.get("stream").and_then(|s| s.as_table()).expect("conf/weir.toml has [stream]");
        for key in ["barrier_interval_ms", "state_cache_bytes_max"] {
            assert!(stream.contains_key(key), "conf/weir.toml lacks stream.{key}");
        }
    }
}
