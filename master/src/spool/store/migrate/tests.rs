//! The spools of earlier schemas in `tests/fixtures/spools`, each made by the release
//! that wrote that schema (`make.sh`), open and are upgraded whole.

use super::*;
use crate::spool::store::Store;
use redb::ReadableDatabase;

fn fixtures() -> Vec<(u32, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/spools");
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(&dir)
        .expect("the fixtures' directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?;
            let n = name.strip_prefix("schema-")?.strip_suffix(".tar.gz")?;
            Some((n.parse().ok()?, p.clone()))
        })
        .collect();
    found.sort();
    found
}

fn unpack(fixture: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let status = std::process::Command::new("tar")
        .arg("-xzf")
        .arg(fixture)
        .arg("-C")
        .arg(dir.path())
        .status()
        .expect("tar runs");
    assert!(status.success(), "tar -xzf {}", fixture.display());
    dir
}

fn schema_of(path: &Path) -> u32 {
    let db = Database::open(path).expect("opens");
    let txn = db.begin_read().expect("reads");
    let meta = txn.open_table(META).expect("meta");
    let v = meta.get("schema").expect("schema").expect("a schema");
    u32::from_be_bytes(<[u8; 4]>::try_from(v.value()).expect("four bytes"))
}

#[test]
fn every_schema_since_the_oldest_has_a_fixture() {
    let have: Vec<u32> = fixtures().into_iter().map(|(n, _)| n).collect();
    let want: Vec<u32> = (OLDEST..SCHEMA_VERSION).collect();
    assert_eq!(
        have, want,
        "tests/fixtures/spools/make.sh makes the missing ones"
    );
}

#[test]
fn a_spool_of_each_earlier_schema_is_upgraded_whole_and_its_copy_kept() {
    for (schema, fixture) in fixtures() {
        let dir = unpack(&fixture);
        let spool = dir.path().join("cell/spool.redb");
        assert_eq!(schema_of(&spool), schema);
        let journal_before =
            std::fs::read(crate::spool::store::journal_path(&spool)).expect("the journal");
        let store = Store::open(&spool, false).unwrap_or_else(|e| panic!("schema {schema}: {e}"));
        let objects = store.load().expect("loads");
        // Every kind the fixture made is there, read in today's layout.
        let kinds = |f: fn(&Object) -> bool| objects.iter().filter(|o| f(o)).count();
        assert!(
            kinds(|o| matches!(o, Object::Job(_))) >= 4,
            "schema {schema}: jobs"
        );
        assert_eq!(
            kinds(|o| matches!(o, Object::QuotaSet { .. })),
            1,
            "schema {schema}"
        );
        // Checkpointing environments came with schema 14, advance reservations with 18.
        let ckpts = kinds(|o| matches!(o, Object::Ckpt(_)));
        assert_eq!(ckpts, usize::from(schema >= 14), "schema {schema}");
        let ars = kinds(|o| matches!(o, Object::Ar(_)));
        assert_eq!(ars, usize::from(schema >= 18), "schema {schema}");
        assert!(
            objects
                .iter()
                .any(|o| matches!(o, Object::Job(j) if j.spec.name == "journaled")),
            "schema {schema}: the job only the journal held"
        );
        let records = store.accounting(|_| true).expect("accounting");
        assert!(
            records.len() >= 5,
            "schema {schema}: {} records",
            records.len()
        );
        drop(store);
        assert_eq!(schema_of(&spool), SCHEMA_VERSION);
        // The copy is the spool as it was: its database as redb opened it (recovered,
        // since the master was killed), its journal byte for byte.
        let copy = copy_path(&spool, schema);
        assert_eq!(schema_of(&copy), schema);
        assert_eq!(
            std::fs::read(copy_path(
                &crate::spool::store::journal_path(&spool),
                schema
            ))
            .expect("the journal's copy"),
            journal_before,
            "schema {schema}"
        );
        // Opened again, it is today's and reads the same.
        let again = Store::open(&spool, false).expect("opens again");
        assert_eq!(again.load().expect("loads"), objects, "schema {schema}");
    }
}

#[test]
fn a_spool_of_a_newer_schema_is_refused_and_left_as_it_is() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let spool = dir.path().join("spool.redb");
    drop(Store::create(&spool, &[]).expect("creates"));
    {
        let db = Database::open(&spool).expect("opens");
        let txn = db.begin_write().expect("writes");
        txn.open_table(META)
            .expect("meta")
            .insert("schema", (SCHEMA_VERSION + 1).to_be_bytes().as_slice())
            .expect("inserts");
        txn.commit().expect("commits");
    }
    let err = Store::open(&spool, false).err().expect("refused");
    assert!(err.to_string().contains("by a newer master"), "{err}");
    assert_eq!(schema_of(&spool), SCHEMA_VERSION + 1);
    assert!(!copy_path(&spool, SCHEMA_VERSION + 1).exists());
}
