//! Sequences: their definitions (`CREATE SEQUENCE`, SERIAL and identity
//! columns) and their values, persisted in sled. The statements are
//! `sql/sequence.rs`; nextval and its family reach the values through it.
//!
//! Values are logged ahead as PostgreSQL's WAL logs them: when the values
//! made durable are used up, the value `LOG_AHEAD` steps further is written
//! and flushed before nextval answers. One fsync covers 32 values, and after
//! a crash the sequence resumes past every value it may have handed out
//! (skipping at most 32), never repeating one. Write-through (one fsync per
//! value) would make every SERIAL insert wait for the disk. Values are not
//! transactional: ROLLBACK does not give them back.
//!
//! Imports `types` and `error` only (no `storage`, `exec`, `planner`, `sql`).

use serde::{Deserialize, Serialize};

use super::{acl, Catalog, State};
use crate::error::Result;
use crate::types::SqlType;
use crate::{bail, err};

pub(super) const SEQUENCE_PREFIX: &str = "sequence/";
/// The logged value of each sequence (runtime state, not a definition).
pub(super) const SEQUENCE_VALUE_PREFIX: &str = "seqvalue/";
/// Values covered by one durable write (PostgreSQL's SEQ_LOG_VALS).
const LOG_AHEAD: i64 = 32;

/// An identity column's kind (`GENERATED ALWAYS` / `BY DEFAULT AS IDENTITY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Identity {
    Always,
    ByDefault,
}

/// The column a sequence belongs to (`OWNED BY t.c`, SERIAL, identity):
/// dropped with its table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnedBy {
    pub table: String,
    pub column: String,
}

/// A sequence's definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequenceDef {
    pub database: String,
    pub name: String,
    /// From the id generator tables use (its OID is `table_oid(id)`).
    pub id: u32,
    /// `AS smallint | integer | bigint`.
    pub ty: SqlType,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    pub start: i64,
    /// CACHE: accepted and shown; every value is handed out one at a time.
    pub cache: i64,
    pub cycle: bool,
    pub owned_by: Option<OwnedBy>,
    /// Set for the sequence behind an identity column.
    pub identity: Option<Identity>,
}

/// An integer type as PostgreSQL names it in sequence messages and catalogs.
pub fn integer_type_name(ty: SqlType) -> &'static str {
    match ty {
        SqlType::Int2 => "smallint",
        SqlType::Int4 => "integer",
        _ => "bigint",
    }
}

impl SequenceDef {
    fn key(&self) -> String {
        format!("{SEQUENCE_PREFIX}{}/{}", self.database, self.name)
    }

    fn value_key(&self) -> String {
        format!("{SEQUENCE_VALUE_PREFIX}{}/{}", self.database, self.name)
    }

    /// The value after `v` (`steps` increments on), or None past a limit.
    fn advance(&self, v: i64, steps: i64) -> Option<i64> {
        let next = v as i128 + self.increment as i128 * steps as i128;
        (next >= self.min as i128 && next <= self.max as i128).then_some(next as i64)
    }
}

/// A sequence's value: the last one handed out, or (not called) the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequenceValue {
    pub last_value: i64,
    pub is_called: bool,
}

/// A sequence's value in memory, with how many more nextvals the last
/// durable write covers.
#[derive(Debug, Clone, Copy)]
pub(super) struct LiveValue {
    value: SequenceValue,
    log_cnt: i64,
}

impl LiveValue {
    pub(super) fn logged(value: SequenceValue) -> LiveValue {
        LiveValue { value, log_cnt: 0 }
    }
}

fn seq_key(database: &str, name: &str) -> (String, String) {
    (database.to_string(), name.to_string())
}

impl Catalog {
    fn put_json<T: Serialize>(&self, key: String, v: &T) -> Result<()> {
        self.put(key, serde_json::to_vec(v).map_err(|e| err!(Internal, "a sequence does not serialize: {e}"))?)
    }

    /// Create a sequence (its id is assigned here); its first nextval
    /// answers `start`.
    pub fn create_sequence(&self, mut def: SequenceDef) -> Result<SequenceDef> {
        let mut st = self.state.write();
        let key = seq_key(&def.database, &def.name);
        if st.tables.contains_key(&key) || st.views.contains_key(&key) || st.sequences.contains_key(&key) {
            bail!(DuplicateTable, "relation \"{}\" already exists", def.name);
        }
        def.id = self.next_table_id()?;
        let value = SequenceValue { last_value: def.start, is_called: false };
        self.put_json(def.value_key(), &value)?;
        self.put_json(def.key(), &def)?;
        self.sequence_values.lock().insert(key.clone(), LiveValue::logged(value));
        st.sequences.insert(key, def.clone());
        Ok(def)
    }

    /// Replace a sequence's definition (ALTER SEQUENCE); its value stays.
    pub fn replace_sequence(&self, def: SequenceDef) -> Result<()> {
        let mut st = self.state.write();
        let key = seq_key(&def.database, &def.name);
        if !st.sequences.contains_key(&key) {
            bail!(UndefinedTable, "relation \"{}\" does not exist", def.name);
        }
        self.put_json(def.key(), &def)?;
        st.sequences.insert(key, def);
        Ok(())
    }

    pub fn drop_sequence(&self, database: &str, name: &str) -> Result<SequenceDef> {
        let mut st = self.state.write();
        self.drop_sequence_locked(&mut st, database, name)
    }

    pub(super) fn drop_sequence_locked(&self, st: &mut State, database: &str, name: &str) -> Result<SequenceDef> {
        let Some(def) = st.sequences.remove(&seq_key(database, name)) else {
            bail!(UndefinedTable, "sequence \"{name}\" does not exist");
        };
        self.del(def.key())?;
        self.del(def.value_key())?;
        self.sequence_values.lock().remove(&seq_key(database, name));
        self.forget_acl(st, &acl::AclObject::Relation(database.to_string(), name.to_string()))?;
        Ok(def)
    }

    /// Drop the sequences a table owns (its SERIAL and identity columns,
    /// `OWNED BY`), with the table.
    pub(super) fn drop_owned_sequences(&self, st: &mut State, database: &str, table: &str) -> Result<()> {
        let owned: Vec<String> = st
            .sequences
            .values()
            .filter(|s| s.database == database && s.owned_by.as_ref().is_some_and(|o| o.table == table))
            .map(|s| s.name.clone())
            .collect();
        for name in owned {
            self.drop_sequence_locked(st, database, &name)?;
        }
        Ok(())
    }

    /// ALTER TABLE … RENAME TO: the sequences the table owns follow it.
    pub(super) fn rename_owner_table(&self, st: &mut State, database: &str, old: &str, new: &str) -> Result<()> {
        for s in st.sequences.values_mut().filter(|s| s.database == database) {
            if let Some(o) = s.owned_by.as_mut().filter(|o| o.table == old) {
                o.table = new.to_string();
                self.put_json(s.key(), &*s)?;
            }
        }
        Ok(())
    }

    /// ALTER TABLE … RENAME COLUMN: the sequences the column owns follow it.
    pub fn rename_owner_column(&self, database: &str, table: &str, old: &str, new: &str) -> Result<()> {
        let mut st = self.state.write();
        for s in st.sequences.values_mut().filter(|s| s.database == database) {
            if let Some(o) = s.owned_by.as_mut().filter(|o| o.table == table && o.column == old) {
                o.column = new.to_string();
                self.put_json(s.key(), &*s)?;
            }
        }
        Ok(())
    }

    pub fn sequence(&self, database: &str, name: &str) -> Option<SequenceDef> {
        self.state.read().sequences.get(&seq_key(database, name)).cloned()
    }

    pub fn sequences(&self, database: &str) -> Vec<SequenceDef> {
        self.state.read().sequences.values().filter(|s| s.database == database).cloned().collect()
    }

    /// The sequences a table's columns own.
    pub fn owned_sequences(&self, database: &str, table: &str) -> Vec<SequenceDef> {
        self.state
            .read()
            .sequences
            .values()
            .filter(|s| s.database == database && s.owned_by.as_ref().is_some_and(|o| o.table == table))
            .cloned()
            .collect()
    }

    /// A sequence's current value (for pg_sequences and `SELECT * FROM s`).
    pub fn sequence_value(&self, def: &SequenceDef) -> SequenceValue {
        self.sequence_values
            .lock()
            .get(&seq_key(&def.database, &def.name))
            .map(|l| l.value)
            .unwrap_or(SequenceValue { last_value: def.start, is_called: false })
    }

    /// nextval: the sequence's next value (2200H past a limit without CYCLE).
    pub fn nextval(&self, database: &str, name: &str) -> Result<i64> {
        let Some(def) = self.sequence(database, name) else {
            bail!(UndefinedTable, "relation \"{name}\" does not exist");
        };
        let key = seq_key(database, name);
        let mut values = self.sequence_values.lock();
        let live = values.entry(key).or_insert(LiveValue::logged(SequenceValue { last_value: def.start, is_called: false }));
        let next = if !live.value.is_called {
            live.value.last_value
        } else {
            match def.advance(live.value.last_value, 1) {
                Some(v) => v,
                None if def.cycle => {
                    if def.increment > 0 {
                        def.min
                    } else {
                        def.max
                    }
                }
                None if def.increment > 0 => {
                    bail!(SequenceGeneratorLimitExceeded, "nextval: reached maximum value of sequence \"{name}\" ({})", def.max)
                }
                None => bail!(SequenceGeneratorLimitExceeded, "nextval: reached minimum value of sequence \"{name}\" ({})", def.min),
            }
        };
        if live.log_cnt <= 0 {
            // Log ahead: durable before the value is handed out.
            let limit = if def.increment > 0 { def.max } else { def.min };
            let ahead = def.advance(next, LOG_AHEAD).unwrap_or(limit);
            self.put_json(def.value_key(), &SequenceValue { last_value: ahead, is_called: true })?;
            live.log_cnt = LOG_AHEAD;
        }
        live.log_cnt -= 1;
        live.value = SequenceValue { last_value: next, is_called: true };
        Ok(next)
    }

    /// setval / ALTER SEQUENCE … RESTART: the value, written through. The
    /// caller checks it against the sequence's bounds.
    pub fn set_sequence_value(&self, def: &SequenceDef, value: SequenceValue) -> Result<()> {
        let mut values = self.sequence_values.lock();
        self.put_json(def.value_key(), &value)?;
        values.insert(seq_key(&def.database, &def.name), LiveValue::logged(value));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str) -> SequenceDef {
        SequenceDef {
            database: "public".into(),
            name: name.into(),
            id: 0,
            ty: SqlType::Int8,
            increment: 1,
            min: 1,
            max: i64::MAX,
            start: 1,
            cache: 1,
            cycle: false,
            owned_by: None,
            identity: None,
        }
    }

    #[test]
    fn values_resume_past_every_value_handed_out_after_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let mut last = 0;
        {
            let cat = Catalog::open(dir.path()).unwrap();
            cat.create_sequence(def("s")).unwrap();
            for want in 1..=40 {
                last = cat.nextval("public", "s").unwrap();
                assert_eq!(last, want);
            }
        }
        // Reopened without a clean shutdown of the values: the logged value
        // is at or past the last one handed out.
        let cat = Catalog::open(dir.path()).unwrap();
        let next = cat.nextval("public", "s").unwrap();
        assert!(next > last, "{next} after {last}");
        assert!(next <= last + LOG_AHEAD + 1, "{next} after {last}");
    }

    #[test]
    fn limits_and_cycle() {
        let dir = tempfile::tempdir().unwrap();
        let cat = Catalog::open(dir.path()).unwrap();
        cat.create_sequence(SequenceDef { max: 2, ..def("s") }).unwrap();
        assert_eq!(cat.nextval("public", "s").unwrap(), 1);
        assert_eq!(cat.nextval("public", "s").unwrap(), 2);
        let e = cat.nextval("public", "s").unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::SequenceGeneratorLimitExceeded, "{e}");
        cat.create_sequence(SequenceDef { max: 2, cycle: true, ..def("c") }).unwrap();
        let got: Vec<i64> = (0..5).map(|_| cat.nextval("public", "c").unwrap()).collect();
        assert_eq!(got, vec![1, 2, 1, 2, 1]);
        cat.create_sequence(SequenceDef { increment: -1, min: -3, max: -1, start: -1, ..def("d") }).unwrap();
        let got: Vec<i64> = (0..3).map(|_| cat.nextval("public", "d").unwrap()).collect();
        assert_eq!(got, vec![-1, -2, -3]);
        assert!(cat.nextval("public", "d").is_err());
    }

    #[test]
    fn dropping_a_table_drops_its_sequences() {
        let dir = tempfile::tempdir().unwrap();
        let cat = Catalog::open(dir.path()).unwrap();
        let t = super::super::TableDef::time_first("public", "t", vec![], vec![]);
        cat.create_table(t).unwrap();
        cat.create_sequence(SequenceDef { owned_by: Some(OwnedBy { table: "t".into(), column: "id".into() }), ..def("t_id_seq") }).unwrap();
        assert!(cat.create_table(super::super::TableDef::time_first("public", "t_id_seq", vec![], vec![])).is_err());
        cat.drop_table("public", "t").unwrap();
        assert!(cat.sequence("public", "t_id_seq").is_none());
        drop(cat);
        let cat = Catalog::open(dir.path()).unwrap();
        assert!(cat.sequence("public", "t_id_seq").is_none());
    }
}
