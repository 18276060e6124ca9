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
    /// All memtables together: the largest is flushed past this.
    pub global_memtable_bytes_max: usize,
    /// A WAL larger than this forces a flush.
    pub wal_bytes_max: u64,
    /// Rows per Parquet row group.
    pub sst_row_group_rows_max: usize,
    /// Read every SST once at open to check its CRC.
    pub sst_verify_crc: bool,
    /// Width of a compaction time window.
    pub compaction_window_ms: i64,
    /// Files below this size count as small for compaction.
    pub compaction_file_bytes_max: u64,
    /// Small files in one window before background compaction merges them.
    pub compaction_files_min: usize,
    /// Period of the background flush/compaction thread; 0 = none.
    pub background_interval_ms: u64,
    /// Largest COPY FROM STDIN payload held before it is written.
    pub copy_buffer_bytes_max: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config { data_dir: "weir-data".into(), listen: "127.0.0.1:5433".into(), storage: StorageSection::default() }
    }
}

impl Default for StorageSection {
    fn default() -> Self {
        let t = crate::storage::StorageTuning::default();
        StorageSection {
            wal_fsync: "always".into(),
            memtable_bytes_max: 64 << 20,
            global_memtable_bytes_max: t.global_memtable_bytes_max,
            wal_bytes_max: t.wal_bytes_max,
            sst_row_group_rows_max: t.sst_row_group_rows_max,
            sst_verify_crc: t.sst_verify_crc,
            compaction_window_ms: t.compaction_window_ms,
            compaction_file_bytes_max: t.compaction_file_bytes_max,
            compaction_files_min: t.compaction_files_min,
            background_interval_ms: t.background_interval_ms,
            copy_buffer_bytes_max: 1 << 30,
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
        let s = &self.storage;
        crate::storage::StorageTuning {
            global_memtable_bytes_max: s.global_memtable_bytes_max,
            wal_bytes_max: s.wal_bytes_max,
            sst_row_group_rows_max: s.sst_row_group_rows_max,
            sst_verify_crc: s.sst_verify_crc,
            compaction_window_ms: s.compaction_window_ms,
            compaction_file_bytes_max: s.compaction_file_bytes_max,
            compaction_files_min: s.compaction_files_min,
            background_interval_ms: s.background_interval_ms,
        }
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
            "copy_buffer_bytes_max",
        ] {
            assert!(storage.contains_key(key), "conf/weir.toml lacks storage.{key}");
        }
    }
}
