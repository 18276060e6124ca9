//! Rules as the catalog records them (`CREATE RULE … AS ON INSERT | UPDATE |
//! DELETE TO t [WHERE …] DO [ALSO | INSTEAD] …`): the event, whether the rule
//! replaces the statement, its condition and its actions, kept as SQL text. The
//! statements are `sql/rule.rs`, which also applies the rules to the statements
//! that write the table.
//!
//! Imports `error` only.

use serde::{Deserialize, Serialize};

use super::Catalog;
use crate::error::Result;

pub(super) const RULE_PREFIX: &str = "rule/";

/// The statement a rule fires for (`pg_rewrite.ev_type`: '2' update, '3'
/// insert, '4' delete).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RuleEvent {
    Insert,
    Update,
    Delete,
}

impl RuleEvent {
    pub fn keyword(self) -> &'static str {
        match self {
            RuleEvent::Insert => "INSERT",
            RuleEvent::Update => "UPDATE",
            RuleEvent::Delete => "DELETE",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleDef {
    /// From the id generator tables use (`pg_rewrite.oid`).
    pub id: u32,
    pub database: String,
    /// The table it is defined on.
    pub table: String,
    pub name: String,
    pub event: RuleEvent,
    /// DO INSTEAD (else DO ALSO).
    pub instead: bool,
    /// The WHERE condition, as SQL.
    pub condition: Option<String>,
    /// The actions, as SQL; empty for NOTHING.
    pub actions: Vec<String>,
}

impl RuleDef {
    fn key(&self) -> String {
        format!("{RULE_PREFIX}{}/{}/{}", self.database, self.table, self.name)
    }
}

impl Catalog {
    /// Record a rule, replacing the one of that name on the table.
    pub fn put_rule(&self, mut def: RuleDef) -> Result<RuleDef> {
        let mut st = self.state.write();
        let k = (def.database.clone(), def.table.clone(), def.name.clone());
        def.id = match st.rules.get(&k) {
            Some(old) => old.id,
            None => self.next_table_id()?,
        };
        self.put(def.key(), serde_json::to_vec(&def).expect("a rule serializes"))?;
        st.rules.insert(k, def.clone());
        Ok(def)
    }

    pub fn drop_rule(&self, database: &str, table: &str, name: &str) -> Result<Option<RuleDef>> {
        let mut st = self.state.write();
        let Some(def) = st.rules.remove(&(database.to_string(), table.to_string(), name.to_string())) else { return Ok(None) };
        self.del(def.key())?;
        Ok(Some(def))
    }

    /// A table's rules, by name (the order PostgreSQL applies them in).
    pub fn rules(&self, database: &str, table: &str) -> Vec<RuleDef> {
        self.state.read().rules.values().filter(|r| r.database == database && r.table == table).cloned().collect()
    }

    /// Whether any table has a rule (writes skip looking for theirs when none does).
    pub fn has_rules(&self) -> bool {
        !self.state.read().rules.is_empty()
    }

    /// Every rule of a database.
    pub fn database_rules(&self, database: &str) -> Vec<RuleDef> {
        self.state.read().rules.values().filter(|r| r.database == database).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_survive_a_reopen_and_keep_their_id_when_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let rule = |name: &str, actions: Vec<String>| RuleDef {
            id: 0,
            database: "public".into(),
            table: "t".into(),
            name: name.into(),
            event: RuleEvent::Insert,
            instead: true,
            condition: None,
            actions,
        };
        let id = {
            let cat = Catalog::open(dir.path()).unwrap();
            let a = cat.put_rule(rule("b_rule", vec![])).unwrap();
            let b = cat.put_rule(rule("b_rule", vec!["INSERT INTO u VALUES (new.a)".into()])).unwrap();
            assert_eq!(a.id, b.id);
            cat.put_rule(rule("a_rule", vec![])).unwrap();
            a.id
        };
        let cat = Catalog::open(dir.path()).unwrap();
        let rules = cat.rules("public", "t");
        assert_eq!(rules.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["a_rule", "b_rule"]);
        assert_eq!(rules[1].id, id);
        assert_eq!(rules[1].actions.len(), 1);
        assert!(cat.drop_rule("public", "t", "a_rule").unwrap().is_some());
        assert!(cat.drop_rule("public", "t", "a_rule").unwrap().is_none());
        assert_eq!(cat.rules("public", "t").len(), 1);
    }
}
