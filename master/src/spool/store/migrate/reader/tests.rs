//! Old and new layouts of small types, written with postcard as an earlier schema wrote
//! them and read back as today's through the changes.

use super::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Schema 1's job.
mod v1 {
    use super::*;
    #[derive(Serialize)]
    pub struct Job {
        pub id: u64,
        pub name: String,
        pub queues: Vec<(String, String)>,
        pub legacy: u8,
    }
    #[derive(Serialize)]
    pub enum Object {
        Job(Job),
        Errors(Vec<(String, String)>),
        Counter(u64),
    }
    #[derive(Serialize)]
    pub enum Event {
        Start { job: u64 },
        End,
    }
}

/// Schema 3's: `legacy` gone (2), `hold` added (2), `prefix` added (3), `Errors`' payload
/// changed (2), a variant `Reservation` inserted before `Counter` (3), `Event::Start`
/// gained a field (3).
mod v3 {
    use super::*;
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    pub struct Job {
        pub id: u64,
        pub name: String,
        pub hold: bool,
        pub queues: Vec<(String, String)>,
        pub prefix: Option<String>,
    }
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    pub struct InError {
        pub queue: String,
        pub host: String,
        pub why: String,
    }
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    pub enum Object {
        Job(Job),
        Errors(Vec<InError>),
        Reservation(u32),
        Counter(u64),
    }
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    pub enum Event {
        Start { job: u64, attempt: u32 },
        End,
    }
}

fn errors_as_list(r: &mut Reader<'_>) -> Encoded {
    let old: Vec<(String, String)> = Deserialize::deserialize(r)?;
    encode(
        &old.into_iter()
            .map(|(queue, host)| v3::InError {
                queue,
                host,
                why: String::new(),
            })
            .collect::<Vec<_>>(),
    )
}

fn skip_u8(r: &mut Reader<'_>) -> Result<(), Error> {
    let _: u8 = Deserialize::deserialize(r)?;
    Ok(())
}

const CHANGES: &[Change] = &[
    Change {
        schema: 2,
        what: "a job keeps its hold",
        kind: Kind::FieldAdded {
            container: "Job",
            field: "hold",
            value: || encode(&false),
        },
    },
    Change {
        schema: 2,
        what: "a job forgets its legacy byte",
        kind: Kind::FieldRemoved {
            container: "Job",
            before: None,
            skip: skip_u8,
        },
    },
    Change {
        schema: 2,
        what: "errors keep why",
        kind: Kind::VariantChanged {
            container: "Object",
            variant: "Errors",
            convert: errors_as_list,
        },
    },
    Change {
        schema: 3,
        what: "reservations",
        kind: Kind::VariantInserted {
            container: "Object",
            index: 2,
        },
    },
    Change {
        schema: 3,
        what: "a job keeps its prefix",
        kind: Kind::FieldAdded {
            container: "Job",
            field: "prefix",
            value: || encode(&Some("#$".to_string())),
        },
    },
    Change {
        schema: 3,
        what: "a start names its attempt",
        kind: Kind::FieldAdded {
            container: "Event::Start",
            field: "attempt",
            value: || encode(&0u32),
        },
    },
];

fn old_job() -> v1::Job {
    v1::Job {
        id: 7,
        name: "sleeper".into(),
        queues: vec![("all.q".into(), "vm".into())],
        legacy: 200,
    }
}

fn new_job(prefix: Option<&str>) -> v3::Job {
    v3::Job {
        id: 7,
        name: "sleeper".into(),
        hold: false,
        queues: vec![("all.q".into(), "vm".into())],
        prefix: prefix.map(str::to_string),
    }
}

fn bytes<T: Serialize>(v: &T) -> Vec<u8> {
    postcard::to_stdvec(v).expect("encodes")
}

#[test]
fn each_kind_of_change_reads_old_bytes_as_the_new_layout() {
    let cases: Vec<(&str, Vec<u8>, v3::Object)> = vec![
        (
            "field added, field removed, field added later",
            bytes(&v1::Object::Job(old_job())),
            v3::Object::Job(new_job(Some("#$"))),
        ),
        (
            "newtype payload converted",
            bytes(&v1::Object::Errors(vec![("all.q".into(), "vm".into())])),
            v3::Object::Errors(vec![v3::InError {
                queue: "all.q".into(),
                host: "vm".into(),
                why: String::new(),
            }]),
        ),
        (
            "variant after an inserted one moves up",
            bytes(&v1::Object::Counter(41)),
            v3::Object::Counter(41),
        ),
    ];
    for (what, old, want) in cases {
        let got: v3::Object = read(&old, 1, 3, CHANGES).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn a_value_of_the_current_schema_reads_unchanged() {
    let now = v3::Object::Job(new_job(Some("#PBS")));
    let got: v3::Object = read(&bytes(&now), 3, 3, CHANGES).expect("reads");
    assert_eq!(got, now);
    let now = v3::Object::Reservation(5);
    let got: v3::Object = read(&bytes(&now), 3, 3, CHANGES).expect("reads");
    assert_eq!(got, now);
}

#[test]
fn a_value_of_a_middle_schema_gets_only_the_later_changes() {
    /// Schema 2's layout, as it was written then.
    #[derive(Serialize)]
    struct Job2 {
        id: u64,
        name: String,
        hold: bool,
        queues: Vec<(String, String)>,
    }
    #[derive(Serialize)]
    enum Object2 {
        Job(Job2),
        #[allow(dead_code)]
        Errors(Vec<v3::InError>),
        Counter(u64),
    }
    let old = Object2::Job(Job2 {
        id: 7,
        name: "sleeper".into(),
        hold: true,
        queues: vec![("all.q".into(), "vm".into())],
    });
    let got: v3::Object = read(&bytes(&old), 2, 3, CHANGES).expect("reads");
    let mut want = new_job(Some("#$"));
    want.hold = true;
    assert_eq!(got, v3::Object::Job(want));
    let got: v3::Object = read(&bytes(&Object2::Counter(3)), 2, 3, CHANGES).expect("reads");
    assert_eq!(got, v3::Object::Counter(3));
}

#[test]
fn changes_apply_inside_sequences_options_maps_and_struct_variants() {
    let old: Vec<v1::Object> = vec![v1::Object::Job(old_job()), v1::Object::Counter(1)];
    let got: Vec<v3::Object> = read(&bytes(&old), 1, 3, CHANGES).expect("reads");
    assert_eq!(
        got,
        vec![v3::Object::Job(new_job(Some("#$"))), v3::Object::Counter(1)]
    );
    let old: Option<v1::Object> = Some(v1::Object::Counter(9));
    let got: Option<v3::Object> = read(&bytes(&old), 1, 3, CHANGES).expect("reads");
    assert_eq!(got, Some(v3::Object::Counter(9)));
    let old: BTreeMap<String, v1::Job> = [("a".to_string(), old_job())].into();
    let got: BTreeMap<String, v3::Job> = read(&bytes(&old), 1, 3, CHANGES).expect("reads");
    assert_eq!(got, [("a".to_string(), new_job(Some("#$")))].into());
    let old = vec![v1::Event::Start { job: 4 }, v1::Event::End];
    let got: Vec<v3::Event> = read(&bytes(&old), 1, 3, CHANGES).expect("reads");
    assert_eq!(
        got,
        vec![v3::Event::Start { job: 4, attempt: 0 }, v3::Event::End]
    );
}

#[test]
fn bytes_that_do_not_fit_the_old_layout_are_an_error() {
    let truncated = &bytes(&v1::Object::Job(old_job()))[..5];
    assert!(read::<v3::Object>(truncated, 1, 3, CHANGES).is_err());
    assert!(matches!(
        read::<Option<u8>>(&[7], 1, 3, CHANGES),
        Err(Error::OptionTag(7))
    ));
}

/// A change's value chained through a later change: a field added at 2 and changed at
/// 3 is read as its schema-2 default, then converted.
#[test]
fn an_added_field_changed_later_is_converted_from_its_default() {
    #[derive(Serialize)]
    struct Old {
        id: u32,
    }
    #[derive(Debug, PartialEq, Deserialize)]
    struct Limits {
        id: u32,
        slots: String,
    }
    const CHAIN: &[Change] = &[
        Change {
            schema: 2,
            what: "a number of slots",
            kind: Kind::FieldAdded {
                container: "Limits",
                field: "slots",
                value: || encode(&4u32),
            },
        },
        Change {
            schema: 3,
            what: "slots as an expression",
            kind: Kind::FieldChanged {
                container: "Limits",
                field: "slots",
                convert: |r| {
                    let n: u32 = Deserialize::deserialize(r)?;
                    encode(&n.to_string())
                },
            },
        },
    ];
    let got: Limits = read(&bytes(&Old { id: 1 }), 1, 3, CHAIN).expect("reads");
    assert_eq!(
        got,
        Limits {
            id: 1,
            slots: "4".into()
        }
    );
}
