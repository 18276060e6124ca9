//! Comments on relations and their columns (`COMMENT ON TABLE | VIEW | COLUMN
//! … IS …`), which obj_description and col_description read. A comment goes
//! with its relation: dropped with it, moved by a rename.
//!
//! Imports `error` only.

use serde::{Deserialize, Serialize};

use super::{Catalog, State};
use crate::error::Result;

pub(super) const COMMENT_PREFIX: &str = "comment/";

/// (database, relation, column; "" for the relation itself).
pub(super) type CommentKey = (String, String, String);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommentDef {
    pub database: String,
    pub relation: String,
    /// None: the relation's own comment.
    pub column: Option<String>,
    pub text: String,
}

impl CommentDef {
    pub(super) fn key(&self) -> CommentKey {
        (self.database.clone(), self.relation.clone(), self.column.clone().unwrap_or_default())
    }
}

fn stored_key(k: &CommentKey) -> String {
    format!("{COMMENT_PREFIX}{}/{}/{}", k.0, k.1, k.2)
}

impl Catalog {
    /// Set a relation's (or its column's) comment; None (or an empty text, as
    /// PostgreSQL) removes it.
    pub fn set_comment(&self, database: &str, relation: &str, column: Option<&str>, text: Option<String>) -> Result<()> {
        let mut st = self.state.write();
        let def =
            CommentDef { database: database.into(), relation: relation.into(), column: column.map(String::from), text: String::new() };
        let key = def.key();
        match text.filter(|t| !t.is_empty()) {
            Some(text) => {
                let def = CommentDef { text, ..def };
                self.put(stored_key(&key), serde_json::to_vec(&def).expect("a comment serializes"))?;
                st.comments.insert(key, def);
            }
            None => {
                if st.comments.remove(&key).is_some() {
                    self.del(stored_key(&key))?;
                }
            }
        }
        Ok(())
    }

    /// The comments of a database's relations and columns.
    pub fn comments(&self, database: &str) -> Vec<CommentDef> {
        self.state.read().comments.values().filter(|c| c.database == database).cloned().collect()
    }

    /// A renamed column's comment follows it.
    pub fn rename_column_comment(&self, database: &str, relation: &str, from: &str, to: &str) -> Result<()> {
        let key = (database.to_string(), relation.to_string(), from.to_string());
        let text = self.state.read().comments.get(&key).map(|c| c.text.clone());
        if let Some(text) = text {
            self.set_comment(database, relation, Some(from), None)?;
            self.set_comment(database, relation, Some(to), Some(text))?;
        }
        Ok(())
    }

    /// Drop a relation's comments (it is dropped).
    pub(super) fn forget_comments(&self, st: &mut State, database: &str, relation: &str) -> Result<()> {
        let keys: Vec<CommentKey> = st.comments.keys().filter(|k| k.0 == database && k.1 == relation).cloned().collect();
        for k in keys {
            self.del(stored_key(&k))?;
            st.comments.remove(&k);
        }
        Ok(())
    }

    /// Move a relation's comments to its new name.
    pub(super) fn rename_comments(&self, st: &mut State, database: &str, old: &str, new: &str) -> Result<()> {
        let keys: Vec<CommentKey> = st.comments.keys().filter(|k| k.0 == database && k.1 == old).cloned().collect();
        for k in keys {
            let Some(mut c) = st.comments.remove(&k) else { continue };
            self.del(stored_key(&k))?;
            c.relation = new.to_string();
            let key = c.key();
            self.put(stored_key(&key), serde_json::to_vec(&c).expect("a comment serializes"))?;
            st.comments.insert(key, c);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_survive_reopen_and_follow_their_relation() {
        let dir = tempfile::tempdir().unwrap();
        {
            let cat = Catalog::open(dir.path()).unwrap();
            cat.set_comment("public", "t", None, Some("a table".into())).unwrap();
            cat.set_comment("public", "t", Some("b"), Some("column b".into())).unwrap();
            cat.set_comment("public", "u", None, Some("gone".into())).unwrap();
            cat.set_comment("public", "u", None, Some(String::new())).unwrap();
            cat.rename_column_comment("public", "t", "b", "bb").unwrap();
        }
        let cat = Catalog::open(dir.path()).unwrap();
        let mut got: Vec<(String, Option<String>, String)> =
            cat.comments("public").into_iter().map(|c| (c.relation, c.column, c.text)).collect();
        got.sort();
        assert_eq!(got, vec![("t".into(), None, "a table".into()), ("t".into(), Some("bb".into()), "column b".into())]);
        let mut st = cat.state.write();
        cat.rename_comments(&mut st, "public", "t", "t2").unwrap();
        cat.forget_comments(&mut st, "public", "t2").unwrap();
        drop(st);
        assert!(cat.comments("public").is_empty());
    }
}
