//! The master's HTTP listener end to end, with curl as a user would drive it: a user
//! certificate from `gantry-master user-cert`, a job submitted through the API that
//! runs as that user, the refusals (no certificate, another user's job, a revoked
//! certificate, bad input of every kind), the Unix socket's peer credentials,
//! `/metrics` read by the OpenMetrics parser, and the OpenAPI document the server serves equal
//! to the committed one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use gantry_tests::{ensure_user, need_root, wait_until, Cluster};

fn free_tcp_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

/// What curl got: (HTTP status, body).
fn curl(args: &[&str]) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-sS", "-o", "-", "-w", "\n%{http_code}", "--max-time", "20"])
        .args(args)
        .output()
        .expect("curl (Debian's curl package)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

struct Https {
    base: String,
    resolve: String,
    ca: String,
}

impl Https {
    fn args<'a>(&'a self, cert: Option<&'a (String, String)>) -> Vec<&'a str> {
        let mut a = vec!["--cacert", &self.ca, "--resolve", &self.resolve];
        if let Some((pem, key)) = cert {
            a.extend(["--cert", pem.as_str(), "--key", key.as_str()]);
        }
        a
    }

    fn get(&self, cert: Option<&(String, String)>, path: &str) -> (u16, String) {
        let url = format!("{}{path}", self.base);
        let mut a = self.args(cert);
        a.push(&url);
        curl(&a)
    }

    fn send(
        &self,
        cert: Option<&(String, String)>,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> (u16, String) {
        let url = format!("{}{path}", self.base);
        let mut a = self.args(cert);
        a.extend(["-X", method, "-H", "content-type: application/json"]);
        if let Some(b) = body {
            a.extend(["--data-binary", b]);
        }
        a.push(&url);
        curl(&a)
    }
}

/// The global configuration with the HTTP listener on `listen`.
fn enable_http(c: &Cluster, listen: &str, anonymous: bool) {
    // -Mconf names the configuration by its file's name.
    let dir = c.dir.path().join("http-conf");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("global");
    std::fs::write(
        &file,
        format!(
            "load_report_time 0:0:1\nmax_unheard 0:0:5\nhttp_listen {listen}\nhttp_anonymous {anonymous}\n"
        ),
    )
    .unwrap();
    let out = c.qconf(&["-Mconf", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{out:?}");
}

fn user_cert(c: &Cluster, user: &str, dir: &Path) -> (String, String) {
    let out = c.master_cmd(&["user-cert", user, "--out", dir.to_str().unwrap()], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .starts_with(&format!("Issued a certificate for {user}")),
        "{out:?}"
    );
    let at = |ext: &str| {
        dir.join(format!("{user}.{ext}"))
            .to_string_lossy()
            .into_owned()
    };
    (at("pem"), at("key"))
}

fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[test]
fn users_submit_list_and_delete_through_the_api_with_their_certificates() {
    if !need_root("users_submit_list_and_delete_through_the_api_with_their_certificates") {
        return;
    }
    for u in ["gtuser1", "gtuser2"] {
        ensure_user(u);
    }
    let c = Cluster::one_host();
    let port = free_tcp_port();
    enable_http(&c, &format!("127.0.0.1:{port}"), false);
    assert!(c.qconf(&["-sconf"]).stdout.contains(&format!(
        "\nhttp_listen                  127.0.0.1:{port}\n"
    )));
    let https = Https {
        base: format!("https://head:{port}"),
        resolve: format!("head:{port}:127.0.0.1"),
        ca: c.home().join("ca.pem").to_string_lossy().into_owned(),
    };
    wait_until("the HTTPS listener", Duration::from_secs(20), || {
        https.get(None, "/api/v1/jobs").0 != 0
    });
    // Without a certificate: refused, and nothing anonymous unless allowed.
    let (status, body) = https.get(None, "/api/v1/jobs");
    assert_eq!(status, 401, "{body}");
    assert!(
        json(&body)["error"]
            .as_str()
            .unwrap()
            .contains("a client certificate is required"),
        "{body}"
    );
    assert_eq!(https.get(None, "/metrics").0, 401);

    let certs = tempfile::tempdir().unwrap();
    let alice = user_cert(&c, "gtuser1", certs.path());
    let bob = user_cert(&c, "gtuser2", certs.path());
    // A job through the API runs as the certificate's user.
    let drop_box = c.dir.path().join("drop");
    std::fs::create_dir(&drop_box).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&drop_box, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let out_file = drop_box.join("api-job.out");
    let script = format!("#!/bin/sh\n#$ -N webjob\nid -un > {}\n", out_file.display());
    let body = serde_json::json!({"args": ["-o", "/dev/null", "-j", "y"], "script": script});
    let (status, answer) = https.send(
        Some(&alice),
        "POST",
        "/api/v1/jobs",
        Some(&body.to_string()),
    );
    assert_eq!(status, 201, "{answer}");
    let answer = json(&answer);
    let job = answer["job_id"].as_u64().unwrap().to_string();
    assert_eq!(
        answer["message"],
        format!("Your job {job} (\"webjob\") has been submitted")
    );
    wait_until("the API's job to run", Duration::from_secs(60), || {
        std::fs::read_to_string(&out_file).is_ok_and(|t| t == "gtuser1\n")
    });
    wait_until("its accounting record", Duration::from_secs(30), || {
        c.client("qacct", &["-j", &job]).code == 0
    });
    let acct = c.client("qacct", &["-j", &job]).stdout;
    assert!(
        acct.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["owner", "gtuser1"]),
        "{acct}"
    );

    // A held job of gtuser1: listed, not deletable by gtuser2, released and deleted by
    // its owner.
    let body = serde_json::json!({"args": ["-h", "-N", "held"], "script": "#!/bin/sh\nsleep 60\n"});
    let (status, answer) = https.send(
        Some(&alice),
        "POST",
        "/api/v1/jobs",
        Some(&body.to_string()),
    );
    assert_eq!(status, 201, "{answer}");
    let held = json(&answer)["job_id"].as_u64().unwrap().to_string();
    let (status, list) = https.get(Some(&bob), "/api/v1/jobs");
    assert_eq!(status, 200, "{list}");
    let list = json(&list);
    let row = list["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job_id"].as_u64().map(|n| n.to_string()).as_deref() == Some(held.as_str()))
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(
        (row["owner"].as_str(), row["state"].as_str()),
        (Some("gtuser1"), Some("hqw"))
    );
    let (status, shown) = https.get(Some(&alice), &format!("/api/v1/jobs/{held}"));
    assert_eq!(status, 200, "{shown}");
    assert!(
        json(&shown)["text"]
            .as_str()
            .unwrap()
            .contains("job_name:                   held\n"),
        "{shown}"
    );
    let (status, refused) = https.send(Some(&bob), "DELETE", &format!("/api/v1/jobs/{held}"), None);
    assert_eq!(status, 403, "{refused}");
    assert!(
        json(&refused)["error"].as_str().unwrap().contains(&format!(
            "gtuser2 - you do not have the necessary privileges to delete the job \"{held}\""
        )),
        "{refused}"
    );
    assert_eq!(c.job_state(&held), "hqw");
    let (status, hold) = https.send(
        Some(&alice),
        "POST",
        &format!("/api/v1/jobs/{held}/hold"),
        None,
    );
    assert_eq!(status, 200, "{hold}");
    let (status, refused) = https.send(
        Some(&bob),
        "POST",
        &format!("/api/v1/jobs/{held}/release"),
        None,
    );
    assert_eq!(status, 403, "{refused}");
    assert_eq!(c.job_state(&held), "hqw");
    let (status, deleted) = https.send(
        Some(&alice),
        "DELETE",
        &format!("/api/v1/jobs/{held}"),
        None,
    );
    assert_eq!(status, 200, "{deleted}");
    assert!(
        json(&deleted)["messages"][0]
            .as_str()
            .unwrap()
            .contains(&format!("has deleted job {held}")),
        "{deleted}"
    );

    // Bad input: each refused with a clear message, nothing submitted.
    let before = c.client("qstat", &["-u", "*"]).stdout;
    let bad: &[(&str, &str, u16, &str)] = &[
        (
            "POST",
            "{\"args\": [",
            400,
            "Failed to parse the request body as JSON",
        ),
        (
            "POST",
            "{\"args\": [], \"script\": \"x\", \"queue\": 1}",
            422,
            "unknown field `queue`",
        ),
        ("POST", "{\"args\": \"-N x\"}", 422, "invalid type"),
        (
            "POST",
            "{\"args\": [\"-l\", \"nosuch=1\"], \"script\": \"#!/bin/sh\\n\"}",
            400,
            "unknown resource \"nosuch\"",
        ),
        (
            "POST",
            "{\"args\": [\"-sync\", \"y\"], \"script\": \"#!/bin/sh\\n\"}",
            400,
            "not available through the HTTP API",
        ),
        ("POST", "{\"args\": []}", 400, "a job needs a script"),
    ];
    for (method, body, want, says) in bad {
        let (status, answer) = https.send(Some(&alice), method, "/api/v1/jobs", Some(body));
        assert_eq!(status, *want, "{body}: {answer}");
        let error = json(&answer)["error"].as_str().unwrap().to_string();
        assert!(error.contains(says), "{body}: {answer}");
    }
    let huge = format!(
        "{{\"args\": [], \"script\": \"{}\"}}",
        "x".repeat(gantry_proto::frame::MAX_FRAME + 10)
    );
    let huge_file = c.dir.path().join("huge.json");
    std::fs::write(&huge_file, huge).unwrap();
    let url = format!("{}/api/v1/jobs", https.base);
    let at_file = format!("@{}", huge_file.display());
    let mut a = https.args(Some(&alice));
    a.extend([
        "-H",
        "content-type: application/json",
        "--data-binary",
        &at_file,
        &url,
    ]);
    let (status, answer) = curl(&a);
    assert_eq!(status, 413, "{answer}");
    for path in ["/api/v1/jobs/..%2F..%2Fetc%2Fpasswd", "/api/v1/jobs/abc"] {
        let (status, answer) = https.get(Some(&alice), path);
        assert_eq!(status, 400, "{path}: {answer}");
        assert!(answer.contains("is no job number"), "{answer}");
    }
    assert_eq!(https.get(Some(&alice), "/api/v1/nosuch").0, 404);
    assert_eq!(c.client("qstat", &["-u", "*"]).stdout, before);

    // The Unix socket: the caller is the socket's peer.
    let socket = c.home().join("http.sock");
    let out = Command::new("runuser")
        .args(["-u", "gtuser2", "--", "curl", "-sS", "--unix-socket"])
        .arg(&socket)
        .arg("http://localhost/api/v1/jobs")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("{\"jobs\":["),
        "{out:?}"
    );

    // /metrics: parsed as OpenMetrics, its counters moved.
    let (status, metrics) = https.get(Some(&bob), "/metrics");
    assert_eq!(status, 200, "{metrics}");
    check_metrics(c.dir.path(), &metrics);
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
            .unwrap_or_else(|| panic!("no {name} in {metrics}"))
    };
    assert!(value("gantry_tasks_dispatched_total ") >= 1.0, "{metrics}");
    assert!(
        value("gantry_tasks_finished_total{state=\"done\"} ") >= 1.0,
        "{metrics}"
    );
    assert_eq!(value("gantry_hosts{state=\"up\"} "), 1.0, "{metrics}");
    assert!(
        metrics.contains("# TYPE gantry_cycle_duration_seconds histogram"),
        "{metrics}"
    );
    // Requests by kind (the q* commands' and the API's alike), refusals by reason, the
    // execds' report lag, the last cycle's jobs and categories.
    assert!(
        value("gantry_requests_decided_total{kind=\"Submit\"} ") >= 2.0,
        "{metrics}"
    );
    assert!(
        value("gantry_refusals_total{reason=\"invalid\"} ") >= 1.0,
        "{metrics}"
    );
    // (a lag is measured from an execd's second report on)
    assert!(
        value("gantry_execd_report_lag_seconds_count ") >= 0.0,
        "{metrics}"
    );
    assert!(value("gantry_cycle_jobs_considered ") >= 0.0, "{metrics}");
    assert!(value("gantry_cycle_categories ") >= 0.0, "{metrics}");

    // The OpenAPI document served is the one committed.
    let (status, served) = https.get(Some(&bob), "/api/v1/openapi.json");
    assert_eq!(status, 200);
    let committed = std::fs::read_to_string(repo().join("docs/api/openapi.json")).unwrap();
    assert_eq!(
        json(&served),
        json(&committed),
        "docs/api/openapi.json is not what the master serves"
    );

    // Revoked: refused at the next connection.
    let out = c.master_cmd(&["user-cert", "gtuser1", "--revoke"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let (status, answer) = https.get(Some(&alice), "/api/v1/jobs");
    assert_eq!(status, 403, "{answer}");
    assert!(answer.contains("was revoked"), "{answer}");
    assert_eq!(https.get(Some(&bob), "/api/v1/jobs").0, 200);
}

/// `http_anonymous true` on loopback: /metrics without a certificate, the API still not.
#[test]
fn anonymous_metrics_only_where_the_administrator_opens_them() {
    if !need_root("anonymous_metrics_only_where_the_administrator_opens_them") {
        return;
    }
    let c = Cluster::one_host();
    let port = free_tcp_port();
    enable_http(&c, &format!("127.0.0.1:{port}"), true);
    let https = Https {
        base: format!("https://head:{port}"),
        resolve: format!("head:{port}:127.0.0.1"),
        ca: c.home().join("ca.pem").to_string_lossy().into_owned(),
    };
    wait_until("the HTTPS listener", Duration::from_secs(20), || {
        https.get(None, "/metrics").0 == 200
    });
    assert_eq!(https.get(None, "/api/v1/jobs").0, 401);
    // Turned off again: the listener goes.
    enable_http(&c, "none", false);
    wait_until("the listener to close", Duration::from_secs(20), || {
        https.get(None, "/metrics").0 == 0
    });
}

/// What-if: where a job would start now, and under a full quota the rule that stops
/// it; nothing is submitted.
#[test]
fn what_if_says_where_a_job_would_start_and_which_rule_stops_it() {
    if !need_root("what_if_says_where_a_job_would_start_and_which_rule_stops_it") {
        return;
    }
    ensure_user("gtuser1");
    let c = Cluster::one_host();
    let port = free_tcp_port();
    enable_http(&c, &format!("127.0.0.1:{port}"), false);
    let https = Https {
        base: format!("https://head:{port}"),
        resolve: format!("head:{port}:127.0.0.1"),
        ca: c.home().join("ca.pem").to_string_lossy().into_owned(),
    };
    wait_until("the HTTPS listener", Duration::from_secs(20), || {
        https.get(None, "/api/v1/jobs").0 != 0
    });
    let certs = tempfile::tempdir().unwrap();
    let alice = user_cert(&c, "gtuser1", certs.path());
    let job = serde_json::json!({"args": ["-b", "y", "sleep", "60"]}).to_string();
    let (status, answer) = https.send(Some(&alice), "POST", "/api/v1/whatif/job", Some(&job));
    assert_eq!(status, 200, "{answer}");
    let answer = json(&answer);
    assert_eq!(
        answer["message"], "would start on node1 (all.q@node1, 1 slot)",
        "{answer}"
    );
    assert_eq!(answer["starts_on"][0]["host"], "node1");
    assert!(
        c.client("qstat", &["-u", "*"]).stdout.is_empty(),
        "the what-if submitted a job"
    );
    // A quota of one slot per user, the slot taken: the rule is named.
    let rqs = c.dir.path().join("one.rqs");
    std::fs::write(
        &rqs,
        "{\n   name         max_u_slots\n   enabled      TRUE\n   limit        users {*} to slots=1\n}\n",
    )
    .unwrap();
    let out = c.qconf(&["-Arqs", rqs.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{out:?}");
    let running = c.submit("gtuser1", &["-b", "y", "sleep", "60"]);
    wait_until("the first job to run", Duration::from_secs(30), || {
        c.job_state(&running) == "r"
    });
    let (status, answer) = https.send(Some(&alice), "POST", "/api/v1/whatif/job", Some(&job));
    assert_eq!(status, 200, "{answer}");
    let answer = json(&answer);
    assert_eq!(answer["message"], "would not start now", "{answer}");
    assert_eq!(answer["would_start"], false);
    let reasons = answer["not_now"].to_string();
    assert!(reasons.contains("max_u_slots"), "{answer}");
    assert_eq!(answer["could_ever_run"], true);
    // A job no instance could ever run.
    let never = serde_json::json!({"args": ["-b", "y", "-l", "arch=sol-sparc64", "sleep", "1"]})
        .to_string();
    let (status, answer) = https.send(Some(&alice), "POST", "/api/v1/whatif/job", Some(&never));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(json(&answer)["message"], "could never run", "{answer}");
    // What-if of quota sets: with a second job waiting for the user's slot, a set of
    // two slots per user would start it; a new set of none puts the running job over.
    assert_eq!(c.qconf(&["-rattr", "queue", "slots", "4", "all.q"]).code, 0);
    let waiting = c.submit("gtuser1", &["-b", "y", "sleep", "60"]);
    let two = serde_json::json!({"rqs": "{\n name max_u_slots\n enabled TRUE\n limit users {*} to slots=2\n}\n{\n name none_left\n enabled TRUE\n limit users {gtuser1} to slots=0\n}\n"}).to_string();
    let (status, answer) = https.send(Some(&alice), "POST", "/api/v1/whatif/quota", Some(&two));
    assert_eq!(status, 200, "{answer}");
    let answer = json(&answer);
    assert_eq!(
        answer["replaced"],
        serde_json::json!(["max_u_slots"]),
        "{answer}"
    );
    assert_eq!(
        answer["added"],
        serde_json::json!(["none_left"]),
        "{answer}"
    );
    assert_eq!(answer["over"][0]["job_id"].to_string(), running, "{answer}");
    assert_eq!(
        answer["over"][0]["limits"],
        serde_json::json!(["exceeds limit \"gtuser1/////\" in rule \"none_left/1\""]),
        "{answer}"
    );
    // none_left stops the waiting job too: only max_u_slots tried alone starts it.
    assert_eq!(answer["would_start"], serde_json::json!([]), "{answer}");
    assert_eq!(
        answer["would_start_today"],
        serde_json::json!([]),
        "{answer}"
    );
    let wider = serde_json::json!({"rqs": "{\n name max_u_slots\n enabled TRUE\n limit users {*} to slots=2\n}\n"}).to_string();
    let (status, answer) = https.send(Some(&alice), "POST", "/api/v1/whatif/quota", Some(&wider));
    assert_eq!(status, 200, "{answer}");
    let answer = json(&answer);
    assert_eq!(answer["over"], serde_json::json!([]), "{answer}");
    assert_eq!(
        answer["would_start"][0]["job_id"].to_string(),
        waiting,
        "{answer}"
    );
    assert_eq!(
        answer["would_start"][0]["queue_instance"], "all.q@node1",
        "{answer}"
    );
    // A set qconf -Arqs would refuse is refused in its words; nothing changed.
    let bad = serde_json::json!({"rqs": "{\n name broken\n limit users {*} to nosuch=1\n}\n"})
        .to_string();
    let (status, answer) = https.send(Some(&alice), "POST", "/api/v1/whatif/quota", Some(&bad));
    assert_eq!(status, 400, "{answer}");
    let qconf_says = {
        let file = c.dir.path().join("broken.rqs");
        std::fs::write(&file, "{\n name broken\n limit users {*} to nosuch=1\n}\n").unwrap();
        c.qconf(&["-Arqs", file.to_str().unwrap()])
    };
    assert_ne!(qconf_says.code, 0);
    assert!(
        qconf_says
            .stderr
            .contains(json(&answer)["error"].as_str().unwrap_or("?")),
        "{answer} vs {qconf_says:?}"
    );
    assert_eq!(c.qconf(&["-srqsl"]).stdout, "max_u_slots\n");
    assert_eq!(c.job_state(&waiting), "qw");
    // The other lists: queue instances, quota usage, groups.
    let (status, queues) = https.get(Some(&alice), "/api/v1/queues");
    assert_eq!(status, 200, "{queues}");
    let queues = json(&queues);
    assert_eq!(queues["queues"][0]["name"], "all.q@node1", "{queues}");
    assert_eq!(queues["queues"][0]["slots_used"], 1, "{queues}");
    gantry_tests::assert_valid_json("qstat.json", &queues.to_string());
    let (status, quotas) = https.get(Some(&alice), "/api/v1/quotas");
    assert_eq!(status, 200, "{quotas}");
    assert!(quotas.contains("max_u_slots/1"), "{quotas}");
    gantry_tests::assert_valid_json("qquota.json", &quotas);
    let (status, groups) = https.get(Some(&alice), "/api/v1/groups");
    assert_eq!(status, 200, "{groups}");
    gantry_tests::assert_valid_json("qquota-g.json", &groups);
    let (status, hosts) = https.get(Some(&alice), "/api/v1/hosts");
    assert_eq!(status, 200, "{hosts}");
    gantry_tests::assert_valid_json("qhost.json", &hosts);
    assert_eq!(
        json(&hosts)["hosts"][0]["queues"][0]["name"],
        "all.q",
        "{hosts}"
    );
    // Advance reservations: refused as qrsub refuses one outside arusers, granted
    // inside, listed and deleted.
    let ar = serde_json::json!({"args": ["-d", "1:0:0"]}).to_string();
    let (status, refused) = https.send(Some(&alice), "POST", "/api/v1/ars", Some(&ar));
    assert_eq!(status, 403, "{refused}");
    let bad = serde_json::json!({"args": ["-d", "soon"]}).to_string();
    assert_eq!(
        https
            .send(Some(&alice), "POST", "/api/v1/ars", Some(&bad))
            .0,
        400
    );
    assert_eq!(c.qconf(&["-au", "gtuser1", "arusers"]).code, 0);
    let (status, granted) = https.send(Some(&alice), "POST", "/api/v1/ars", Some(&ar));
    assert_eq!(status, 201, "{granted}");
    assert!(granted.contains("has been granted"), "{granted}");
    let (status, ars) = https.get(Some(&alice), "/api/v1/ars");
    assert_eq!(status, 200, "{ars}");
    gantry_tests::assert_valid_json("qrstat.json", &ars);
    let ars = json(&ars);
    let id = ars["advance_reservations"][0]["id"]
        .as_u64()
        .unwrap_or_else(|| panic!("{ars}"));
    let (status, deleted) = https.send(Some(&alice), "DELETE", &format!("/api/v1/ars/{id}"), None);
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(c.client("qdel", &[&running, &waiting]).code, 0);
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The exposition parsed by the Prometheus project's own OpenMetrics parser (its
/// Python client, Debian's python3-prometheus-client): strict about names, types,
/// units, label syntax and the closing `# EOF`. (promtool's `check metrics` reads the
/// older text format only, which prometheus-client does not write.)
fn check_metrics(dir: &Path, text: &str) {
    let file = dir.join("metrics.txt");
    std::fs::write(&file, text).unwrap();
    let parse = "import sys\n\
from prometheus_client.openmetrics.parser import text_string_to_metric_families\n\
families = list(text_string_to_metric_families(open(sys.argv[1]).read()))\n\
print(len(families))\n";
    let out = Command::new("/usr/bin/python3")
        .args(["-c", parse])
        .arg(&file)
        .output()
        .expect("/usr/bin/python3 with Debian's python3-prometheus-client");
    assert!(
        out.status.success(),
        "the OpenMetrics parser refused /metrics: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let families: usize = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(families >= 10, "{families} families\n{text}");
}
