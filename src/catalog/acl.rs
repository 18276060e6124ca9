//! Object privileges as PostgreSQL keeps them: an owner and an access
//! control list (`aclitem[]`) per database and per relation (table or
//! view), stored in the catalog's sled tree beside the definitions
//! (`acl/db/<name>`, `acl/rel/<db>/<name>`), and the checks that read them
//! (owner, superuser, membership through INHERIT roles, PUBLIC).
//!
//! An object without an entry is owned by the bootstrap superuser and has
//! PostgreSQL's default ACL (NULL in `relacl` / `datacl`): the owner holds
//! everything; on databases PUBLIC also holds CONNECT and TEMP.
//!
//! Part of `catalog`: may import `error` only.

use serde::{Deserialize, Serialize};

use super::Catalog;
use crate::error::Result;
use crate::{bail, err};

/// Privilege bits, in PostgreSQL's order (`ACL_INSERT` = bit 0 …), so the
/// letters of `aclitem`'s text form come out in its order.
pub const INSERT: u32 = 1 << 0;
pub const SELECT: u32 = 1 << 1;
pub const UPDATE: u32 = 1 << 2;
pub const DELETE: u32 = 1 << 3;
pub const TRUNCATE: u32 = 1 << 4;
pub const REFERENCES: u32 = 1 << 5;
pub const TRIGGER: u32 = 1 << 6;
pub const USAGE: u32 = 1 << 8;
pub const CREATE: u32 = 1 << 9;
pub const TEMP: u32 = 1 << 10;
pub const CONNECT: u32 = 1 << 11;

/// PostgreSQL's `ACL_ALL_RIGHTS_STR`: letter i is bit i.
const LETTERS: &[u8] = b"arwdDxtXUCTc";

/// Everything a table or view can grant.
pub const TABLE_ALL: u32 = INSERT | SELECT | UPDATE | DELETE | TRUNCATE | REFERENCES | TRIGGER;
/// Everything a database can grant.
pub const DATABASE_ALL: u32 = CREATE | TEMP | CONNECT;

/// One `aclitem`: `grantee=privs/grantor`; an empty grantee is PUBLIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AclItem {
    pub grantee: String,
    pub grantor: String,
    pub privs: u32,
    /// The privileges held WITH GRANT OPTION (a subset of `privs`).
    pub grant_options: u32,
}

/// What an ACL is attached to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AclObject {
    Database(String),
    /// A table or view of a database.
    Relation(String, String),
    /// A flow (flows are named per process); it has an owner only.
    Flow(String),
}

impl AclObject {
    pub(super) fn key(&self) -> String {
        match self {
            AclObject::Database(d) => format!("{}db/{d}", super::ACL_PREFIX),
            AclObject::Relation(d, n) => format!("{}rel/{d}/{n}", super::ACL_PREFIX),
            AclObject::Flow(n) => format!("{}flow/{n}", super::ACL_PREFIX),
        }
    }

    /// Everything that can be granted on this kind of object.
    pub fn all(&self) -> u32 {
        match self {
            AclObject::Database(_) => DATABASE_ALL,
            AclObject::Relation(..) => TABLE_ALL,
            AclObject::Flow(_) => 0,
        }
    }
}

/// The stored owner and ACL of one object (None: the default ACL).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ObjectAcl {
    pub owner: Option<String>,
    pub acl: Option<Vec<AclItem>>,
}

/// PostgreSQL's `acldefault`: the owner holds everything (its grant
/// options are implied by ownership, not stored); on databases PUBLIC holds TEMP and CONNECT.
pub fn default_acl(obj: &AclObject, owner: &str) -> Vec<AclItem> {
    let mut v = Vec::new();
    if matches!(obj, AclObject::Database(_)) {
        v.push(AclItem { grantee: String::new(), grantor: owner.to_string(), privs: TEMP | CONNECT, grant_options: 0 });
    }
    v.push(AclItem { grantee: owner.to_string(), grantor: owner.to_string(), privs: obj.all(), grant_options: 0 });
    v
}

/// A role name as `aclitem` prints it: quoted when it is not plain.
fn acl_name(n: &str) -> String {
    if n.chars().all(|c| c.is_alphanumeric() || c == '_') {
        n.to_string()
    } else {
        format!("\"{}\"", n.replace('"', "\"\""))
    }
}

/// The privilege letters of a mask (`*` after a letter held with grant option).
pub fn privilege_letters(privs: u32, grant_options: u32) -> String {
    let mut s = String::new();
    for (i, l) in LETTERS.iter().enumerate() {
        if privs & (1 << i) != 0 {
            s.push(*l as char);
            if grant_options & (1 << i) != 0 {
                s.push('*');
            }
        }
    }
    s
}

/// One `aclitem` in PostgreSQL's text form (`alice=arwdDxt/weir`, `=r/weir`).
pub fn item_text(i: &AclItem) -> String {
    let grantee = if i.grantee.is_empty() { String::new() } else { acl_name(&i.grantee) };
    format!("{grantee}={}/{}", privilege_letters(i.privs, i.grant_options), acl_name(&i.grantor))
}

/// An `aclitem[]` in PostgreSQL's text form (`{alice=arwdDxt/weir,=r/weir}`).
pub fn acl_text(items: &[AclItem]) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|i| {
            let t = item_text(i);
            // Array elements with special characters are quoted.
            if t.contains([',', '"', '{', '}', ' ', '\\']) {
                format!("\"{}\"", t.replace('\\', "\\\\").replace('"', "\\\""))
            } else {
                t
            }
        })
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// A privilege name (`SELECT`, `temporary` …) as its bit, for `obj`'s kind.
pub fn privilege_bit(name: &str) -> Option<u32> {
    Some(match name.trim().to_ascii_uppercase().as_str() {
        "SELECT" => SELECT,
        "INSERT" => INSERT,
        "UPDATE" => UPDATE,
        "DELETE" => DELETE,
        "TRUNCATE" => TRUNCATE,
        "REFERENCES" => REFERENCES,
        "TRIGGER" => TRIGGER,
        "USAGE" => USAGE,
        "CREATE" => CREATE,
        "TEMP" | "TEMPORARY" => TEMP,
        "CONNECT" => CONNECT,
        _ => return None,
    })
}

/// PostgreSQL's name of a privilege bit, for messages.
pub fn privilege_name(bit: u32) -> &'static str {
    match bit {
        SELECT => "SELECT",
        INSERT => "INSERT",
        UPDATE => "UPDATE",
        DELETE => "DELETE",
        TRUNCATE => "TRUNCATE",
        REFERENCES => "REFERENCES",
        TRIGGER => "TRIGGER",
        USAGE => "USAGE",
        CREATE => "CREATE",
        TEMP => "TEMPORARY",
        CONNECT => "CONNECT",
        _ => "?",
    }
}

/// PostgreSQL's `aclupdate` for a GRANT: the item of (grantee, grantor)
/// gains `privs` (and their grant options), or a new item is appended.
pub fn acl_grant(acl: &mut Vec<AclItem>, grantee: &str, grantor: &str, privs: u32, with_grant_option: bool) {
    if privs == 0 {
        return;
    }
    let go = if with_grant_option { privs } else { 0 };
    match acl.iter_mut().find(|i| i.grantee == grantee && i.grantor == grantor) {
        Some(i) => {
            i.privs |= privs;
            i.grant_options |= go;
        }
        None => acl.push(AclItem { grantee: grantee.to_string(), grantor: grantor.to_string(), privs, grant_options: go }),
    }
}

/// A REVOKE: the item of (grantee, grantor) loses `privs` (only their grant
/// options when `grant_option_only`); an item left empty goes.
pub fn acl_revoke(acl: &mut Vec<AclItem>, grantee: &str, grantor: &str, privs: u32, grant_option_only: bool) {
    for i in acl.iter_mut().filter(|i| i.grantee == grantee && i.grantor == grantor) {
        i.grant_options &= !privs;
        if !grant_option_only {
            i.privs &= !privs;
        }
    }
    acl.retain(|i| i.privs != 0);
}

/// The privileges (and grant options) `roles` and PUBLIC hold in `acl`.
pub fn acl_mask(acl: &[AclItem], roles: &[String]) -> (u32, u32) {
    let (mut p, mut g) = (0, 0);
    for i in acl {
        if i.grantee.is_empty() || roles.iter().any(|r| *r == i.grantee) {
            p |= i.privs;
            g |= i.grant_options;
        }
    }
    (p, g)
}

/// Key of an ALTER DEFAULT PRIVILEGES entry: `acl/default/<role>/<db>`
/// (an empty db: every database).
fn default_key(role: &str, schema: Option<&str>) -> String {
    format!("{}default/{role}/{}", super::ACL_PREFIX, schema.unwrap_or(""))
}

/// The hard-wired ACL of a new relation owned by `role`.
fn relation_default(role: &str) -> Vec<AclItem> {
    default_acl(&AclObject::Relation(String::new(), String::new()), role)
}

impl Catalog {
    /// ALTER DEFAULT PRIVILEGES [FOR ROLE role] [IN SCHEMA db] … ON TABLES:
    /// edit the entry of (role, db). A global entry (no db) holds the whole
    /// initial ACL, starting from the hard-wired one; a per-database entry
    /// holds what is added to it (PostgreSQL's pg_default_acl). An entry
    /// left at its starting point goes, as PostgreSQL removes the row.
    pub fn edit_default_acl(&self, role: &str, schema: Option<&str>, f: impl FnOnce(&mut Vec<AclItem>) -> Result<()>) -> Result<()> {
        let key = default_key(role, schema);
        let mut st = self.state.write();
        let start = if schema.is_none() { relation_default(role) } else { Vec::new() };
        let mut acl = st.acls.get(&key).and_then(|e| e.acl.clone()).unwrap_or_else(|| start.clone());
        f(&mut acl)?;
        if acl == start {
            if let Some(old) = st.acls.remove(&key) {
                super::roles::journal_acl(&key, Some(&old));
                self.del(key)?;
            }
        } else {
            let entry = ObjectAcl { owner: Some(role.to_string()), acl: Some(acl) };
            self.put(key.clone(), serde_json::to_vec(&entry).map_err(|e| err!(Internal, "{e}"))?)?;
            super::roles::journal_acl(&key, st.acls.get(&key));
            st.acls.insert(key, entry);
        }
        Ok(())
    }

    /// Every default-privileges entry: (role, database or None, items).
    pub fn default_acls(&self) -> Vec<(String, Option<String>, Vec<AclItem>)> {
        let prefix = format!("{}default/", super::ACL_PREFIX);
        let st = self.state.read();
        st.acls
            .iter()
            .filter_map(|(k, e)| {
                let (role, db) = k.strip_prefix(&prefix)?.rsplit_once('/')?;
                Some((role.to_string(), (!db.is_empty()).then(|| db.to_string()), e.acl.clone().unwrap_or_default()))
            })
            .collect()
    }

    /// The ACL a relation `owner` creates in `db` starts with: the global
    /// default entry (else the hard-wired ACL) plus the database's entry;
    /// None when neither exists (relacl stays NULL).
    pub fn initial_relation_acl(&self, owner: &str, db: &str) -> Option<Vec<AclItem>> {
        let st = self.state.read();
        let global = st.acls.get(&default_key(owner, None)).and_then(|e| e.acl.clone());
        let schema = st.acls.get(&default_key(owner, Some(db))).and_then(|e| e.acl.clone());
        if global.is_none() && schema.is_none() {
            return None;
        }
        let mut acl = global.unwrap_or_else(|| relation_default(owner));
        for i in schema.unwrap_or_default() {
            acl_grant(&mut acl, &i.grantee, &i.grantor, i.privs, false);
            if let Some(x) = acl.iter_mut().find(|x| x.grantee == i.grantee && x.grantor == i.grantor) {
                x.grant_options |= i.grant_options;
            }
        }
        Some(acl)
    }

    /// The role created at the first start (oid 10), which owns every
    /// object without a recorded owner.
    pub fn bootstrap_role(&self) -> String {
        self.state.read().roles.values().find(|r| r.oid == 10).map(|r| r.name.clone()).unwrap_or_else(|| "weir".into())
    }

    /// The stored entry of an object (default owner and ACL resolved).
    pub fn object_acl(&self, obj: &AclObject) -> (String, Vec<AclItem>, bool) {
        let stored = self.state.read().acls.get(&obj.key()).cloned().unwrap_or_default();
        let owner = stored.owner.clone().unwrap_or_else(|| self.bootstrap_role());
        match stored.acl {
            Some(a) => (owner, a, true),
            None => (owner.clone(), default_acl(obj, &owner), false),
        }
    }

    /// The owner of an object.
    pub fn owner_of(&self, obj: &AclObject) -> String {
        self.object_acl(obj).0
    }

    /// The ACL as `relacl` / `datacl` show it: NULL while it is the default.
    pub fn acl_column(&self, obj: &AclObject) -> Option<String> {
        let (_, acl, explicit) = self.object_acl(obj);
        explicit.then(|| acl_text(&acl))
    }

    /// Record a new object's owner (CREATE TABLE / VIEW / DATABASE); any
    /// stale entry of an earlier object of that name is replaced.
    pub fn set_owner(&self, obj: &AclObject, owner: &str) -> Result<()> {
        self.update_acl(obj, |o| {
            *o = ObjectAcl { owner: Some(owner.to_string()), acl: None };
            Ok(())
        })
    }

    /// ALTER … OWNER TO: the new owner takes over the old owner's grants,
    /// as PostgreSQL's `aclnewowner` does.
    pub fn change_owner(&self, obj: &AclObject, new_owner: &str) -> Result<()> {
        let (old, _, _) = self.object_acl(obj);
        self.update_acl(obj, |o| {
            if let Some(acl) = o.acl.as_mut() {
                for i in acl.iter_mut() {
                    if i.grantee == old {
                        i.grantee = new_owner.to_string();
                    }
                    if i.grantor == old {
                        i.grantor = new_owner.to_string();
                    }
                }
            }
            o.owner = Some(new_owner.to_string());
            Ok(())
        })
    }

    /// Change an object's ACL with `f`, given the materialized ACL (the
    /// default one if none was stored yet) and the owner.
    pub fn edit_acl(&self, obj: &AclObject, f: impl FnOnce(&mut Vec<AclItem>, &str) -> Result<()>) -> Result<()> {
        let bootstrap = self.bootstrap_role();
        self.update_acl(obj, |o| {
            let owner = o.owner.clone().unwrap_or(bootstrap);
            let mut acl = o.acl.take().unwrap_or_else(|| default_acl(obj, &owner));
            f(&mut acl, &owner)?;
            o.acl = Some(acl);
            Ok(())
        })
    }

    fn update_acl(&self, obj: &AclObject, f: impl FnOnce(&mut ObjectAcl) -> Result<()>) -> Result<()> {
        let key = obj.key();
        let mut st = self.state.write();
        let mut entry = st.acls.get(&key).cloned().unwrap_or_default();
        f(&mut entry)?;
        self.put(key.clone(), serde_json::to_vec(&entry).map_err(|e| err!(Internal, "{e}"))?)?;
        super::roles::journal_acl(&key, st.acls.get(&key));
        st.acls.insert(key, entry);
        Ok(())
    }

    /// Forget an object's owner and ACL (it was dropped).
    pub fn forget_object_acl(&self, obj: &AclObject) -> Result<()> {
        let mut st = self.state.write();
        self.forget_acl(&mut st, obj)
    }

    pub(super) fn forget_acl(&self, st: &mut super::State, obj: &AclObject) -> Result<()> {
        let key = obj.key();
        if let Some(old) = st.acls.remove(&key) {
            super::roles::journal_acl(&key, Some(&old));
            self.del(key)?;
        }
        Ok(())
    }

    /// What depends on a role, in PostgreSQL's words (`owner of table t`,
    /// `privileges for database d`, `owner of default privileges on new
    /// relations belonging to role r in schema s`): DROP ROLE refuses while
    /// any is left. `current_db` is the database shown as schema `public`.
    pub fn role_dependents(&self, role: &str, current_db: &str) -> Vec<String> {
        let st = self.state.read();
        let mut out = Vec::new();
        for (key, o) in &st.acls {
            let Some(rest) = key.strip_prefix(super::ACL_PREFIX) else { continue };
            if let Some((owner, db)) = rest.strip_prefix("default/").and_then(|r| r.rsplit_once('/')) {
                let schema = match db {
                    "" => String::new(),
                    d if d == current_db => " in schema public".to_string(),
                    d => format!(" in schema {d}"),
                };
                let what = format!("default privileges on new relations belonging to role {owner}{schema}");
                if owner == role {
                    out.push(format!("owner of {what}"));
                } else if o.acl.as_ref().is_some_and(|a| a.iter().any(|i| i.grantee == role || i.grantor == role)) {
                    out.push(format!("privileges for {what}"));
                }
                continue;
            }
            let what = match rest.split_once('/') {
                Some(("db", n)) => format!("database {n}"),
                Some(("rel", dn)) => {
                    let (d, n) = dn.split_once('/').unwrap_or(("", dn));
                    let kind = if st.views.contains_key(&(d.to_string(), n.to_string())) { "view" } else { "table" };
                    format!("{kind} {n}")
                }
                Some(("flow", n)) => format!("flow {n}"),
                _ => continue,
            };
            if o.owner.as_deref() == Some(role) {
                out.push(format!("owner of {what}"));
            }
            if o.acl
                .as_ref()
                .is_some_and(|a| a.iter().any(|i| i.grantee == role || (i.grantor == role && o.owner.as_deref() != Some(role))))
            {
                out.push(format!("privileges for {what}"));
            }
        }
        out
    }

    /// ALTER ROLE … RENAME TO: owners and ACL items follow the role, and
    /// its default-privileges entries move to the new name's keys.
    pub fn rename_role_in_acls(&self, old: &str, new: &str) -> Result<()> {
        let keys: Vec<String> = self.state.read().acls.keys().cloned().collect();
        let old_default = format!("{}default/{old}/", super::ACL_PREFIX);
        for key in keys {
            let mut st = self.state.write();
            let Some(mut o) = st.acls.get(&key).cloned() else { continue };
            if let Some(db) = key.strip_prefix(&old_default).filter(|db| !db.contains('/')) {
                // The entry's key names its role: it moves.
                let moved = default_key(new, (!db.is_empty()).then_some(db));
                super::roles::journal_acl(&key, Some(&o));
                self.del(key.clone())?;
                st.acls.remove(&key);
                o.owner = Some(new.to_string());
                for i in o.acl.iter_mut().flatten() {
                    for n in [&mut i.grantee, &mut i.grantor] {
                        if n == old {
                            *n = new.to_string();
                        }
                    }
                }
                self.put(moved.clone(), serde_json::to_vec(&o).map_err(|e| err!(Internal, "{e}"))?)?;
                super::roles::journal_acl(&moved, st.acls.get(&moved));
                st.acls.insert(moved, o);
                continue;
            }
            let mut changed = false;
            if o.owner.as_deref() == Some(old) {
                o.owner = Some(new.to_string());
                changed = true;
            }
            for i in o.acl.iter_mut().flatten() {
                for n in [&mut i.grantee, &mut i.grantor] {
                    if n == old {
                        *n = new.to_string();
                        changed = true;
                    }
                }
            }
            if changed {
                self.put(key.clone(), serde_json::to_vec(&o).map_err(|e| err!(Internal, "{e}"))?)?;
                super::roles::journal_acl(&key, st.acls.get(&key));
                st.acls.insert(key, o);
            }
        }
        Ok(())
    }

    /// The privileges `user` holds on `obj` and those it may grant:
    /// everything for a superuser; else what the ACL gives the roles whose
    /// privileges it has (itself and INHERIT memberships) and PUBLIC; an
    /// owner (or a member of the owner) may always grant.
    pub fn privileges(&self, user: &str, obj: &AclObject) -> (u32, u32) {
        if self.is_superuser(user) {
            return (obj.all(), obj.all());
        }
        let (owner, acl, _) = self.object_acl(obj);
        let roles = self.role_closure(user, true);
        let (p, mut g) = acl_mask(&acl, &roles);
        if roles.contains(&owner) {
            g = obj.all();
        }
        (p, g)
    }

    /// Does `user` hold every privilege of `mask` on `obj`?
    pub fn has_privilege(&self, user: &str, obj: &AclObject, mask: u32) -> bool {
        self.privileges(user, obj).0 & mask == mask
    }

    /// Is `user` the owner of `obj` (a superuser, or a role that has the
    /// owner's privileges)?
    pub fn is_owner(&self, user: &str, obj: &AclObject) -> bool {
        self.is_superuser(user) || self.role_closure(user, true).contains(&self.owner_of(obj))
    }

    /// 42501 unless `user` holds `mask` on relation `db.name` (`kind`:
    /// "table" or "view", as PostgreSQL words the message).
    pub fn check_relation(&self, user: &str, db: &str, name: &str, kind: &str, mask: u32) -> Result<()> {
        if !self.has_privilege(user, &AclObject::Relation(db.into(), name.into()), mask) {
            bail!(InsufficientPrivilege, "permission denied for {kind} {name}");
        }
        Ok(())
    }

    /// 42501 unless `user` owns relation `db.name` (`kind` as PostgreSQL's
    /// message has it: "table", "view").
    pub fn check_relation_owner(&self, user: &str, db: &str, name: &str, kind: &str) -> Result<()> {
        if !self.is_owner(user, &AclObject::Relation(db.into(), name.into())) {
            bail!(InsufficientPrivilege, "must be owner of {kind} {name}");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acl_text_and_updates() {
        let t = AclObject::Relation("d".into(), "t".into());
        let mut acl = default_acl(&t, "weir");
        assert_eq!(acl_text(&acl), "{weir=arwdDxt/weir}");
        acl_grant(&mut acl, "alice", "weir", SELECT | INSERT, true);
        acl_grant(&mut acl, "", "weir", SELECT, false);
        assert_eq!(acl_text(&acl), "{weir=arwdDxt/weir,alice=a*r*/weir,=r/weir}");
        acl_revoke(&mut acl, "alice", "weir", INSERT, true);
        assert_eq!(acl_text(&acl), "{weir=arwdDxt/weir,alice=ar*/weir,=r/weir}");
        acl_revoke(&mut acl, "alice", "weir", TABLE_ALL, false);
        assert_eq!(acl_text(&acl), "{weir=arwdDxt/weir,=r/weir}");
        let db = AclObject::Database("d".into());
        assert_eq!(acl_text(&default_acl(&db, "weir")), "{=Tc/weir,weir=CTc/weir}");
        assert_eq!(acl_mask(&acl, &["bob".into()]), (SELECT, 0));
        let odd = AclItem { grantee: "a b".into(), grantor: "weir".into(), privs: SELECT, grant_options: 0 };
        assert_eq!(acl_text(&[odd]), "{\"\\\"a b\\\"=r/weir\"}");
    }

    #[test]
    fn grants_survive_reopen_and_follow_membership() {
        let dir = tempfile::tempdir().unwrap();
        let t = AclObject::Relation("public".into(), "t".into());
        {
            let cat = Catalog::open(dir.path()).unwrap();
            let mut su = super::super::RoleDef::new("weir");
            su.superuser = true;
            cat.create_role(su).unwrap();
            cat.create_role(super::super::RoleDef::new("reader")).unwrap();
            let mut alice = super::super::RoleDef::new("alice");
            alice.member_of = vec!["reader".into()];
            cat.create_role(alice).unwrap();
            cat.set_owner(&t, "weir").unwrap();
            assert!(!cat.has_privilege("alice", &t, SELECT));
            cat.edit_acl(&t, |acl, owner| {
                acl_grant(acl, "reader", owner, SELECT, false);
                Ok(())
            })
            .unwrap();
        }
        let cat = Catalog::open(dir.path()).unwrap();
        assert!(cat.has_privilege("alice", &t, SELECT));
        assert!(!cat.has_privilege("alice", &t, INSERT));
        assert!(cat.has_privilege("weir", &t, INSERT));
        assert_eq!(cat.acl_column(&t).unwrap(), "{weir=arwdDxt/weir,reader=r/weir}");
        cat.alter_role("alice", |r| {
            r.inherit = false;
            Ok(())
        })
        .unwrap();
        assert!(!cat.has_privilege("alice", &t, SELECT), "NOINHERIT: no privileges through membership");
    }
    /// Default-privilege entries hold their role (owner) and grantees:
    /// PostgreSQL's DETAIL lines; a rename moves the entry to the new name.
    #[test]
    fn default_acl_dependents_and_rename() {
        let dir = tempfile::tempdir().unwrap();
        let cat = Catalog::open(dir.path()).unwrap();
        for n in ["weir", "owner", "reader"] {
            cat.create_role(super::super::RoleDef::new(n)).unwrap();
        }
        cat.edit_default_acl("owner", Some("d"), |acl| {
            acl_grant(acl, "reader", "owner", SELECT, false);
            Ok(())
        })
        .unwrap();
        let what = "default privileges on new relations belonging to role owner in schema public";
        assert_eq!(cat.role_dependents("owner", "d"), [format!("owner of {what}")]);
        assert_eq!(cat.role_dependents("reader", "d"), [format!("privileges for {what}")]);
        assert_eq!(
            cat.role_dependents("reader", "other"),
            ["privileges for default privileges on new relations belonging to role owner in schema d"]
        );
        cat.rename_role_in_acls("owner", "boss").unwrap();
        let all = cat.default_acls();
        assert_eq!(all.len(), 1);
        assert_eq!((all[0].0.as_str(), all[0].1.as_deref(), acl_text(&all[0].2)), ("boss", Some("d"), "{reader=r/boss}".into()));
        assert!(cat.role_dependents("owner", "d").is_empty());
        assert_eq!(cat.initial_relation_acl("boss", "d").map(|a| acl_text(&a)), Some("{boss=arwdDxt/boss,reader=r/boss}".into()));
    }
}
