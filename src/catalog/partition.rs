//! Declarative partitioning as the catalog records it: a partitioned
//! table's key (strategy and key expressions as SQL text) and a partition's
//! parent and bound. Every table of a tree has the parent's columns in the
//! parent's order, so a key bound over one table's columns evaluates over
//! any of them. Routing and checks live in `sql/partition.rs`.
//!
//! Imports `types` only (no `storage`, `exec`, `planner`, `sql`).

use serde::{Deserialize, Serialize};

/// PARTITION BY RANGE / LIST / HASH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Strategy {
    Range,
    List,
    Hash,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Range => "range",
            Strategy::List => "list",
            Strategy::Hash => "hash",
        }
    }

    /// `pg_partitioned_table.partstrat`.
    pub fn code(self) -> &'static str {
        match self {
            Strategy::Range => "r",
            Strategy::List => "l",
            Strategy::Hash => "h",
        }
    }
}

/// A partitioned table's key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionKey {
    pub strategy: Strategy,
    /// Each key column or expression as SQL text.
    pub exprs: Vec<String>,
    /// Each key element's operator class when one was named (`PARTITION BY
    /// HASH (a my_ops)`); empty when none was, the type's default class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub opclasses: Vec<Option<String>>,
}

impl PartitionKey {
    /// The operator class named for key element `i`.
    pub fn opclass(&self, i: usize) -> Option<&str> {
        self.opclasses.get(i).and_then(|c| c.as_deref())
    }
}

/// One datum of a range bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RangeDatum {
    MinValue,
    MaxValue,
    /// A constant as SQL text.
    Value(String),
}

/// `FOR VALUES …` / `DEFAULT`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Bound {
    Default,
    /// The listed constants as SQL text (`NULL` included).
    List(Vec<String>),
    Range {
        from: Vec<RangeDatum>,
        to: Vec<RangeDatum>,
    },
    Hash {
        modulus: u64,
        remainder: u64,
    },
}

/// A partition's place in its tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionOf {
    /// The parent table, in the same database.
    pub parent: String,
    pub bound: Bound,
}

/// A table's partitioning: its own key when it is partitioned, its parent
/// and bound when it is a partition (both for a sub-partitioned partition).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Partitioning {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<PartitionKey>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of: Option<PartitionOf>,
}

impl Partitioning {
    pub fn is_none(&self) -> bool {
        self.key.is_none() && self.of.is_none()
    }
}

fn datum_sql(d: &RangeDatum) -> String {
    match d {
        RangeDatum::MinValue => "MINVALUE".into(),
        RangeDatum::MaxValue => "MAXVALUE".into(),
        RangeDatum::Value(v) => v.clone(),
    }
}

impl Bound {
    /// As `pg_get_expr(relpartbound, …)` prints it.
    pub fn sql(&self) -> String {
        match self {
            Bound::Default => "DEFAULT".into(),
            Bound::List(v) => format!("FOR VALUES IN ({})", v.join(", ")),
            Bound::Range { from, to } => format!(
                "FOR VALUES FROM ({}) TO ({})",
                from.iter().map(datum_sql).collect::<Vec<_>>().join(", "),
                to.iter().map(datum_sql).collect::<Vec<_>>().join(", ")
            ),
            Bound::Hash { modulus, remainder } => format!("FOR VALUES WITH (modulus {modulus}, remainder {remainder})"),
        }
    }
}

impl PartitionKey {
    /// As `pg_get_partkeydef` prints it.
    pub fn sql(&self) -> String {
        let elements: Vec<String> = self
            .exprs
            .iter()
            .enumerate()
            .map(|(i, e)| match self.opclass(i) {
                Some(c) => format!("{e} {c}"),
                None => e.clone(),
            })
            .collect();
        format!("{} ({})", self.strategy.name().to_uppercase(), elements.join(", "))
    }
}
