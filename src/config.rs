//! Configuration: `conf/weir.toml`, overridden by command-line flags.

use serde::Deserialize;

/// The whole config file.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct Config {
    pub data_dir: String,
    pub listen: String,
    pub storage: StorageSection,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct StorageSection {
    /// fsync the WAL before acknowledging a write ("always" or "never").
    pub wal_fsync: String,
    /// A memtable larger than this is flushed.
    pub memtable_bytes_max: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config { data_dir: "weir-data".into(), listen: "127.0.0.1:5433".into(), storage: StorageSection::default() }
    }
}

impl Default for StorageSection {
    fn default() -> Self {
        StorageSection { wal_fsync: "always".into(), memtable_bytes_max: 64 << 20 }
    }
}

impl Config {
    pub fn load(path: &std::path::Path) -> crate::error::Result<Config> {
        let text = std::fs::read_to_string(path)?;
        toml::from_str(&text).map_err(|e| crate::err!(InvalidParameterValue, "invalid config file {}: {e}", path.display()))
    }

    pub fn storage_config(&self) -> crate::storage::StorageConfig {
        crate::storage::StorageConfig {
            wal_fsync: self.storage.wal_fsync != "never",
            memtable_bytes_max: self.storage.memtable_bytes_max,
        }
    }
}
