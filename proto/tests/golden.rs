//! Golden encodings: postcard is positional, so any change to these bytes is a wire
//! change and must come with a new PROTOCOL_VERSION.

#![allow(clippy::unwrap_used)]

use gantry_proto::*;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn samples() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "hello",
            encode(&Hello::new(PeerRole::Execd, "0.1.0")).unwrap(),
        ),
        (
            "hello_reply",
            encode(&HelloReply::Accepted {
                protocol_version: 1,
            })
            .unwrap(),
        ),
        (
            "load_report",
            encode(&FromExecd::LoadReport {
                values: vec![LoadValue {
                    name: "num_proc".into(),
                    value: "2".into(),
                }],
            })
            .unwrap(),
        ),
        (
            "settings",
            encode(&ToExecd::Settings {
                load_report_time_secs: 40,
            })
            .unwrap(),
        ),
        (
            "show_exec_host",
            encode(&ToMaster::ShowExecHost { host: "vm".into() }).unwrap(),
        ),
        (
            "relayed",
            encode(&Relayed {
                caller: Caller {
                    user: "u1".into(),
                    uid: 1000,
                    gid: 1000,
                    host: "n1".into(),
                },
                request: ToMaster::ShowManagers,
            })
            .unwrap(),
        ),
        (
            "refused",
            encode(&FromMaster::Refused(Refusal {
                kind: RefusalKind::Denied,
                message: "no".into(),
            }))
            .unwrap(),
        ),
        ("job_state", encode(&JobState::pending(true)).unwrap()),
        (
            "items",
            encode(&FromMaster::Items(vec![ItemResult {
                message: "x".into(),
                refused: true,
            }]))
            .unwrap(),
        ),
        (
            "show_job_lines",
            encode(&ToMaster::ShowJobLines {
                users: vec!["u".into()],
            })
            .unwrap(),
        ),
        (
            "job_lines",
            encode(&FromMaster::JobLines(vec![JobLine {
                state: JobState::Running,
                head: "h".into(),
                when: -1,
                tail: "t".into(),
            }]))
            .unwrap(),
        ),
    ]
}

#[test]
fn encodings_are_pinned() {
    let want = [
        ("hello", "474e54592c0105302e312e30"),
        ("hello_reply", "0001"),
        ("load_report", "0201086e756d5f70726f630132"),
        ("settings", "0128"),
        ("show_exec_host", "0202766d"),
        ("relayed", "027531e807e807026e3107"),
        ("refused", "0900026e6f"),
        ("job_state", "0001"),
        ("items", "1401017801"),
        ("show_job_lines", "3a010175"),
        ("job_lines", "1801030168010174"),
    ];
    let got = samples();
    for ((name, bytes), (wname, whex)) in got.iter().zip(want.iter()) {
        assert_eq!(name, wname);
        assert_eq!(
            hex(bytes),
            *whex,
            "encoding of {name} changed: bump PROTOCOL_VERSION"
        );
    }
    assert_eq!(got.len(), want.len());
    assert_eq!(PROTOCOL_VERSION, 44);
    assert_eq!(alpn_current(), b"gantry/44");
}

#[test]
fn hello_is_checked() {
    let bytes = encode(&Hello::new(PeerRole::Client, "x")).unwrap();
    assert!(decode_hello(&bytes).is_ok());
    let mut bad = bytes.clone();
    bad[0] = b'X';
    assert!(matches!(decode_hello(&bad), Err(ProtoError::BadMagic(_))));
    assert!(decode_hello(&[1, 2]).is_err());
}

#[test]
fn oversized_frames_are_refused() {
    assert!(frame::payload_len(frame::length_prefix(frame::MAX_FRAME)).is_ok());
    assert!(matches!(
        frame::payload_len(((frame::MAX_FRAME + 1) as u32).to_be_bytes()),
        Err(ProtoError::FrameTooLarge(..))
    ));
}

#[test]
fn job_states_print_and_filter_as_sge_does() {
    // (state, letters, restarted (SGE's job_get_state_string: R before q/r, no w),
    // qstat -s p, -s r, -s h)
    let table = [
        (JobState::pending(false), "qw", "Rq", true, false, false),
        (JobState::pending(true), "hqw", "hRq", true, false, true),
        (JobState::Error, "Eqw", "ERq", true, false, false),
        (JobState::Transferring, "t", "Rt", false, true, false),
        (JobState::Running, "r", "Rr", false, true, false),
        (JobState::Suspended, "s", "Rs", false, false, false),
        (JobState::QueueSuspended, "S", "SR", false, false, false),
        (JobState::Deleting, "dr", "dRr", false, true, false),
        (JobState::Zombie, "z", "z", false, false, false),
    ];
    for (state, letters, again, p, r, h) in table {
        assert_eq!(state.letters(), letters);
        assert_eq!(state.letters_restarted(), again);
        assert_eq!(state.to_string(), letters);
        assert_eq!(
            (state.is_pending(), state.is_running(), state.is_held()),
            (p, r, h),
            "{letters}"
        );
    }
}
