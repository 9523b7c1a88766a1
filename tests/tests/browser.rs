//! The status page in a real browser: Debian's headless Chromium driven through
//! chromedriver (WebDriver, from Rust with fantoccini). The page loads over HTTPS,
//! shows the jobs just submitted, filters them by user, and a job's page shows its
//! `qstat -j`. A screenshot is kept in `target/test-artifacts/status-page.png`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{ClientBuilder, Locator};
use gantry_tests::{ensure_user, need_root, wait_until, Cluster};

fn free_tcp_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("target/test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_status_page_shows_and_filters_jobs_in_chromium() {
    if !need_root("the_status_page_shows_and_filters_jobs_in_chromium") {
        return;
    }
    // As root (CI) the browser must be there: .ci/run installs it.
    for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver"] {
        assert!(
            Path::new(tool).exists(),
            "{tool} is missing: install Debian's chromium and chromium-driver (.ci/run does)"
        );
    }
    for u in ["gtuser1", "gtuser2"] {
        ensure_user(u);
    }
    let c = Cluster::one_host();
    let port = free_tcp_port();
    let conf = c.dir.path().join("http-conf");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(
        conf.join("global"),
        format!("load_report_time 0:0:1\nmax_unheard 0:0:5\nhttp_listen 127.0.0.1:{port}\nhttp_anonymous true\n"),
    )
    .unwrap();
    let out = c.qconf(&["-Mconf", conf.join("global").to_str().unwrap()]);
    assert_eq!(out.code, 0, "{out:?}");
    let mine = c.submit(
        "gtuser1",
        &["-h", "-N", "browserjob", "-b", "y", "sleep", "1"],
    );
    let theirs = c.submit(
        "gtuser2",
        &["-h", "-N", "otherjob", "-b", "y", "sleep", "1"],
    );

    let driver_port = free_tcp_port();
    let profile = tempfile::tempdir().unwrap();
    let _driver = Driver(
        Command::new("/usr/bin/chromedriver")
            .arg(format!("--port={driver_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver"),
    );
    wait_until("chromedriver", Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", driver_port)).is_ok()
    });
    let base = format!("https://127.0.0.1:{port}");
    wait_until("the HTTPS listener", Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // fantoccini's own TLS (unused: the driver is on loopback HTTP) wants a provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    runtime.block_on(async {
        let mut caps = serde_json::Map::new();
        caps.insert("acceptInsecureCerts".into(), serde_json::json!(true));
        caps.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({
                "binary": "/usr/bin/chromium",
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-quic", "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--window-size=1280,1600",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            }),
        );
        let browser = ClientBuilder::rustls()
            .expect("rustls")
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{driver_port}"))
            .await
            .expect("a WebDriver session with chromium");
        browser.goto(&format!("{base}/")).await.unwrap();
        let table = browser
            .find(Locator::Css("#job-table"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            table.contains("browserjob") && table.contains("otherjob"),
            "{table}"
        );
        let hosts = browser
            .find(Locator::Css("#hosts + table"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(hosts.contains("node1"), "{hosts}");
        // Filter by user through the form, as a person would.
        let user = browser
            .find(Locator::Css("input[name=user]"))
            .await
            .unwrap();
        user.send_keys("gtuser2").await.unwrap();
        browser
            .find(Locator::Css("form button[type=submit]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        // The filtered page replaces this one: until it has loaded the table may be
        // the old one or not there at all.
        let mut filtered = String::new();
        for _ in 0..100 {
            if let Ok(table) = browser.find(Locator::Css("#job-table")).await {
                filtered = table.text().await.unwrap_or_default();
                if !filtered.is_empty() && !filtered.contains("browserjob") {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if !filtered.contains("otherjob") {
            filtered.push_str(&browser.source().await.unwrap_or_default());
        }
        assert!(
            filtered.contains("otherjob") && !filtered.contains("browserjob"),
            "{filtered}"
        );
        let count = browser
            .find(Locator::Css("#job-count"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(count, "1 of 2 jobs shown");
        assert!(browser
            .current_url()
            .await
            .unwrap()
            .as_str()
            .contains("user=gtuser2"));
        let png = browser.screenshot().await.unwrap();
        std::fs::write(artifacts().join("status-page.png"), png).unwrap();
        // A job's page: its qstat -j.
        browser
            .find(Locator::LinkText(&theirs))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let mut detail = String::new();
        for _ in 0..100 {
            if let Ok(e) = browser.find(Locator::Css("#qstat-j")).await {
                detail = e.text().await.unwrap();
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(detail.contains("otherjob"), "{detail}");
        assert!(
            detail.contains(&format!("job_number:                 {theirs}")),
            "{detail}"
        );
        browser.close().await.unwrap();
    });
    assert_eq!(c.client("qdel", &[&mine, &theirs]).code, 0);
}
