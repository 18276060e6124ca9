//! Seed 001's query extension keys: `flow.incremental_after_seqs`,
//! `flow.incremental_mode`, `flow.return_region_seq`, `flow.sink_table_id`,
//! read from the session settings and turned into per-region sequence
//! bounds. Without the keys a query is an ordinary query.

use std::collections::HashMap;

use crate::error::Result;
use crate::storage::{RegionId, SeqBounds, SeqMode, SeqNo};
use crate::{bail, err};

/// The validated keys of one query.
#[derive(Debug, Default, Clone)]
pub struct IncrementalKeys {
    pub after: HashMap<RegionId, SeqNo>,
    pub memtable_only: bool,
    pub return_region_seq: bool,
    pub sink_table_id: Option<u32>,
}

impl IncrementalKeys {
    /// Parse and validate; None when no key is set.
    pub fn from_settings(settings: &HashMap<String, String>) -> Result<Option<IncrementalKeys>> {
        let get = |k: &str| settings.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let after_text = get("flow.incremental_after_seqs");
        let mode = get("flow.incremental_mode");
        let ret = get("flow.return_region_seq");
        let sink = get("flow.sink_table_id");
        if after_text.is_none() && mode.is_none() && ret.is_none() && sink.is_none() {
            return Ok(None);
        }
        let mut keys = IncrementalKeys::default();
        if let Some(m) = mode {
            if !m.eq_ignore_ascii_case("memtable_only") {
                return Err(
                    err!(InvalidParameterValue, "invalid flow.incremental_mode \"{m}\"").with_hint("the only mode is memtable_only")
                );
            }
            keys.memtable_only = true;
        }
        if let Some(t) = after_text {
            let v: serde_json::Value =
                serde_json::from_str(t).map_err(|e| err!(InvalidParameterValue, "flow.incremental_after_seqs is not valid JSON: {e}"))?;
            let serde_json::Value::Object(map) = v else {
                bail!(InvalidParameterValue, "flow.incremental_after_seqs must be a JSON object of region id to sequence")
            };
            for (k, v) in map {
                let region: u64 = k.parse().map_err(|_| {
                    err!(InvalidParameterValue, "flow.incremental_after_seqs: region id \"{k}\" is not an unsigned integer")
                })?;
                let seq: u64 = match &v {
                    serde_json::Value::Number(n) => n.as_u64().ok_or_else(|| {
                        err!(InvalidParameterValue, "flow.incremental_after_seqs: sequence for region {k} is not an unsigned integer")
                    })?,
                    serde_json::Value::String(s) => s.parse().map_err(|_| {
                        err!(
                            InvalidParameterValue,
                            "flow.incremental_after_seqs: sequence \"{s}\" for region {k} is not an unsigned integer"
                        )
                    })?,
                    other => bail!(
                        InvalidParameterValue,
                        "flow.incremental_after_seqs: sequence for region {k} must be a number or a string, not {other}"
                    ),
                };
                keys.after.insert(region, seq);
            }
        }
        if keys.memtable_only && keys.after.is_empty() {
            bail!(InvalidParameterValue, "flow.incremental_mode = memtable_only needs a non-empty flow.incremental_after_seqs");
        }
        if let Some(r) = ret {
            keys.return_region_seq = match r.to_ascii_lowercase().as_str() {
                "true" | "on" | "1" => true,
                "false" | "off" | "0" => false,
                _ => bail!(InvalidParameterValue, "flow.return_region_seq must be true or false, not \"{r}\""),
            };
        }
        if let Some(s) = sink {
            keys.sink_table_id =
                Some(s.parse().map_err(|_| err!(InvalidParameterValue, "flow.sink_table_id must be a table id, not \"{s}\""))?);
        }
        Ok(Some(keys))
    }

    /// Bounds for one source region, snapshot at `last_seq`. Every scanned
    /// source region needs an entry once any lower bound is given: a query
    /// is never silently widened to a full read.
    pub fn bounds(&self, region: RegionId, last_seq: SeqNo, table: &str) -> Result<SeqBounds> {
        let mode = if self.memtable_only { SeqMode::MemtableOnly } else { SeqMode::Exact };
        if self.after.is_empty() {
            return Ok(SeqBounds { after: None, upto: Some(last_seq), mode: SeqMode::Exact });
        }
        let Some(&after) = self.after.get(&region) else {
            return Err(err!(InvalidParameterValue, "incremental query has no sequence for region {region} of table \"{table}\"")
                .with_hint("give every scanned region an entry in flow.incremental_after_seqs"));
        };
        Ok(SeqBounds { after: Some(after), upto: Some(last_seq), mode })
    }
}
