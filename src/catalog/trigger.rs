//! Triggers of a table (`CREATE TRIGGER`): kept in the table's definition,
//! so they are stored with it, survive a restart and go when it is dropped.
//! What they do is `sql/trigger.rs`'s.

use serde::{Deserialize, Serialize};

/// BEFORE, AFTER or INSTEAD OF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TriggerTiming {
    Before,
    After,
    InsteadOf,
}

impl TriggerTiming {
    /// `TG_WHEN`'s value.
    pub fn word(self) -> &'static str {
        match self {
            TriggerTiming::Before => "BEFORE",
            TriggerTiming::After => "AFTER",
            TriggerTiming::InsteadOf => "INSTEAD OF",
        }
    }
}

/// The statement kinds a trigger fires on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TriggerOp {
    Insert,
    Update,
    Delete,
    Truncate,
}

impl TriggerOp {
    /// `TG_OP`'s value.
    pub fn word(self) -> &'static str {
        match self {
            TriggerOp::Insert => "INSERT",
            TriggerOp::Update => "UPDATE",
            TriggerOp::Delete => "DELETE",
            TriggerOp::Truncate => "TRUNCATE",
        }
    }
}

/// One trigger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriggerDef {
    pub name: String,
    pub timing: TriggerTiming,
    pub ops: Vec<TriggerOp>,
    /// `UPDATE OF cols`: fires only when the statement sets one of them.
    #[serde(default)]
    pub update_columns: Vec<String>,
    /// FOR EACH ROW (else FOR EACH STATEMENT).
    pub row: bool,
    /// The WHEN condition as SQL (over `NEW` / `OLD`).
    #[serde(default)]
    pub when: Option<String>,
    /// The function's database and name (it takes no arguments and
    /// returns `trigger`).
    pub function_database: String,
    pub function: String,
    /// `TG_ARGV`.
    #[serde(default)]
    pub args: Vec<String>,
    /// REFERENCING OLD TABLE AS … / NEW TABLE AS … (statement triggers).
    #[serde(default)]
    pub old_table: Option<String>,
    #[serde(default)]
    pub new_table: Option<String>,
}

impl TriggerDef {
    /// Whether it fires for `op` at `timing` on each row (`row`) or once.
    pub fn fires(&self, timing: TriggerTiming, op: TriggerOp, row: bool) -> bool {
        self.timing == timing && self.row == row && self.ops.contains(&op)
    }
}
