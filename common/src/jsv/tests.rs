use super::*;

fn who() -> Submitter {
    Submitter {
        user: "alice".into(),
        group: "staff".into(),
    }
}

fn job() -> JobSpec {
    JobSpec {
        hard_resources: vec![("h_rt".into(), "60".into())],
        soft_queues: vec!["fast.q".into()],
        pe: Some(("smp".into(), "2-4".into())),
        args: vec!["x".into()],
        ..JobSpec::binary("sleeper", "/bin/sleep", "head")
    }
}

#[test]
fn a_job_is_shown_with_sges_parameter_names() {
    let p = parameters(&job(), &who(), Context::Client);
    let get = |k: &str| p.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(
        p[0],
        ("VERSION".into(), "1.0".into()),
        "VERSION comes first"
    );
    assert_eq!(get("CONTEXT"), Some("client"));
    assert_eq!(get("USER"), Some("alice"));
    assert_eq!(get("GROUP"), Some("staff"));
    assert_eq!(get("CMDNAME"), Some("/bin/sleep"));
    assert_eq!(get("CMDARGS"), Some("1"));
    assert_eq!(get("CMDARG0"), Some("x"));
    assert_eq!(get("b"), Some("y"));
    assert_eq!(get("l_hard"), Some("h_rt=60"));
    assert_eq!(get("q_soft"), Some("fast.q"));
    assert_eq!(get("pe_name"), Some("smp"));
    assert_eq!(get("pe_min"), Some("2"));
    assert_eq!(get("pe_max"), Some("4"));
    assert_eq!(get("N"), Some("sleeper"));
    assert_eq!(get("l_soft"), None, "what the job does not set is not sent");
}

#[test]
fn corrections_are_applied_and_checked() {
    let mut j = job();
    set_parameter(&mut j, "l_hard", Some("h_rt=120,mem_free=1G")).unwrap();
    assert_eq!(
        j.hard_resources,
        vec![
            ("h_rt".to_string(), "120".to_string()),
            ("mem_free".to_string(), "1G".to_string())
        ]
    );
    set_parameter(&mut j, "pe_max", Some("8")).unwrap();
    assert_eq!(j.pe, Some(("smp".into(), "2-8".into())));
    set_parameter(&mut j, "q_soft", None).unwrap();
    assert!(j.soft_queues.is_empty());
    set_parameter(&mut j, "t_max", Some("5")).unwrap();
    assert_eq!(
        j.array,
        Some(TaskRange {
            first: 1,
            last: 5,
            step: 1
        })
    );
    set_parameter(&mut j, "h", Some("u")).unwrap();
    assert!(j.hold);
    let table = [
        (
            "USER",
            Some("root"),
            "JSV tries to modify read-only parameter \"USER\"",
        ),
        ("N", None, "JSV tries to delete \"N\""),
        ("j", None, "JSV tries to delete boolean parameter \"j\""),
        ("j", Some("maybe"), "JSV tries to set \"j\" to \"maybe\""),
        ("p", Some("5000"), "JSV tries to set \"p\" to \"5000\""),
        ("nosuch", Some("1"), "JSV tries to set \"nosuch\" to \"1\""),
    ];
    for (name, value, want) in table {
        assert_eq!(
            set_parameter(&mut j, name, value).unwrap_err(),
            want,
            "{name}"
        );
    }
}

fn script(dir: &std::path::Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

/// A real JSV (a shell script) corrects one job and rejects another.
#[test]
fn a_script_corrects_and_rejects() {
    let dir = tempfile::tempdir().unwrap();
    let correct = script(
        dir.path(),
        "correct.sh",
        "#!/bin/sh\n\
         while read cmd name value; do\n\
           case \"$cmd\" in\n\
             START) echo STARTED ;;\n\
             PARAM) [ \"$name\" = N ] && jobname=$value ;;\n\
             BEGIN) echo \"LOG INFO checked $jobname\"\n\
                    echo \"PARAM l_hard h_rt=30\"\n\
                    echo \"ENV ADD FROM_JSV yes\"\n\
                    echo \"RESULT STATE CORRECT\" ;;\n\
             QUIT) exit 0 ;;\n\
           esac\n\
         done\n",
    );
    let mut j = job();
    assert_eq!(
        verify(&correct, None, &mut j, &who(), Context::Client),
        Verdict::Accepted {
            log: vec![("INFO".into(), "checked sleeper".into())]
        }
    );
    assert_eq!(
        j.hard_resources,
        vec![("h_rt".to_string(), "30".to_string())]
    );
    assert!(j.env.contains(&("FROM_JSV".to_string(), "yes".to_string())));
    let reject = script(
        dir.path(),
        "reject.sh",
        "#!/bin/sh\nwhile read cmd rest; do\n case \"$cmd\" in\n START) echo STARTED ;;\n BEGIN) echo 'RESULT STATE REJECT no jobs today' ;;\n QUIT) exit 0 ;;\n esac\ndone\n",
    );
    let mut j = job();
    assert_eq!(
        verify(&reject, None, &mut j, &who(), Context::Client),
        Verdict::Rejected {
            message: "no jobs today".into(),
            log: vec![]
        }
    );
    assert_eq!(j, job(), "a rejected job is left as it was");
    // One that never answers is given up after SGE_JSV_TIMEOUT (here the default 10 s
    // would slow the test down; a script that exits at once ends the conversation).
    let silent = script(dir.path(), "silent.sh", "#!/bin/sh\nexit 0\n");
    assert!(matches!(
        verify(&silent, None, &mut job(), &who(), Context::Client),
        Verdict::Rejected { message, .. } if message.contains("ended before its verdict")
    ));
}

#[test]
fn urls_are_checked_as_sge_checks_them() {
    let dir = tempfile::tempdir().unwrap();
    let ok = script(dir.path(), "ok.sh", "#!/bin/sh\n");
    let url = |user: Option<&str>| Url {
        user: user.map(str::to_string),
        path: ok.clone(),
    };
    assert_eq!(parse_url(&ok, Context::Client), Ok(url(None)));
    assert_eq!(
        parse_url(&format!("script:{ok}"), Context::Client),
        Ok(url(None))
    );
    assert_eq!(
        parse_url(&format!("script:alice@{ok}"), Context::Master),
        Ok(url(Some("alice")))
    );
    assert_eq!(
        parse_url(&format!("alice@{ok}"), Context::Client).unwrap_err(),
        "specifying user is not allowed in client JSV URLs"
    );
    assert_eq!(
        parse_url("java:/x.jar", Context::Client).unwrap_err(),
        "type \"java\" in JSV URL is invalid"
    );
    assert_eq!(
        parse_url("/no/such/jsv", Context::Client).unwrap_err(),
        "JSV file \"/no/such/jsv\" does not exist"
    );
    let plain = dir.path().join("plain");
    std::fs::write(&plain, "x").unwrap();
    let plain = plain.to_string_lossy().into_owned();
    assert_eq!(
        parse_url(&plain, Context::Client).unwrap_err(),
        format!("JSV \"{plain}\" is either not a file or not executeable")
    );
}

#[test]
fn the_changed_parameters_are_named() {
    let before = job();
    let mut after = job();
    after.hard_resources = vec![("h_rt".into(), "30".into())];
    after.soft_queues.clear();
    after.env.push(("X".into(), "1".into()));
    after.binding = Some("set linear:2".into());
    let mut changed = changed_parameters(&before, &after, &who(), Context::Master);
    changed.sort();
    // The binding's parameters count as one, `binding`, as SGE's jsv_allowed_mod has it.
    assert_eq!(changed, vec!["binding", "l_hard", "q_soft", "v"]);
    let mut j = job();
    set_parameter(&mut j, "binding_strategy", Some("striding")).unwrap();
    set_parameter(&mut j, "binding_step", Some("2")).unwrap();
    set_parameter(&mut j, "binding_type", Some("env")).unwrap();
    assert_eq!(j.binding.as_deref(), Some("env striding:1:2"));
    assert!(parameters(&j, &who(), Context::Client)
        .contains(&("binding_step".to_string(), "2".to_string())));
    assert!(set_parameter(&mut j, "binding_amount", Some("0")).is_err());
}
