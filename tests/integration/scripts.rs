//! The project's own scripts as a new user runs them (newcomer-5 P15): `scripts/try`
//! on the port it is given, `scripts/check-package` on a machine that already has the
//! package, and the README's `.deb` line naming the file `scripts/package` writes.

use std::path::Path;
use std::process::Command;

use crate::harness::*;

fn script(name: &str) -> String {
    format!("{}/scripts/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `scripts/try PORT` starts its throwaway server on PORT (it picked a random port,
/// which cannot be pinned to a range a firewall or a namespace allows), runs the demo
/// with the binaries already built, and stops the server; a port in use is refused
/// before anything starts, rather than the demo pointed at another server.
#[test]
fn try_takes_the_port_it_is_given() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let bin = Path::new(RUN).parent().unwrap();
    let out = output(
        Command::new(script("try"))
            .arg(port.to_string())
            .env("REDLOCK_TRY_BIN", bin),
    );
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains(&format!("redis-server on 127.0.0.1:{port} ")),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("took over after the first run"),
        "{}",
        stdout(&out)
    );
    // The server is gone with the script.
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());

    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = busy.local_addr().unwrap().port();
    let out = output(
        Command::new(script("try"))
            .arg(taken.to_string())
            .env("REDLOCK_TRY_BIN", bin),
    );
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "try: port {taken} is in use on 127.0.0.1; give a free one, or none for any free port\n"
        )
    );
    let out = output(Command::new(script("try")).arg("80a"));
    assert_eq!(code(&out), 64, "{}", stderr(&out));
}

/// `scripts/check-package` installs the package and removes it: on a machine where a
/// user had installed redlock-run, it removed theirs (and cron mailed "not found"
/// until they reinstalled). It now refuses with one line and runs nothing else: here
/// `dpkg-query` says the package is installed, and any other dpkg or apt call is
/// recorded and fails.
#[test]
fn check_package_never_removes_an_installed_package() {
    let s = Scratch::new();
    let calls = s.path("calls");
    let bin = s.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = calls.display();
    let fake = |name: &str, body: &str| {
        let path = bin.join(name);
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho \"{name} $*\" >> '{log}'\n{body}\n"),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    fake("dpkg-query", "printf 'install ok installed 0.1.0-1'");
    for tool in ["dpkg", "apt-get", "lintian", "ls"] {
        fake(tool, "exit 99");
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = output(Command::new(script("check-package")).env("PATH", path));
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("check-package: redlock-run 0.1.0-1 is installed on this machine"),
        "{}",
        stderr(&out)
    );
    let called = std::fs::read_to_string(&calls).unwrap();
    assert_eq!(called.lines().count(), 1, "{called}");
    assert!(called.starts_with("dpkg-query "), "{called}");
}

/// The README's `.deb` line named `./redlock-run_…deb`, but `scripts/package` writes
/// it into `dist/`: `apt install` said "Unsupported file".
#[test]
fn the_readme_deb_line_names_the_file_scripts_package_writes() {
    let package = std::fs::read_to_string(script("package")).unwrap();
    assert!(
        package.contains("--output dist/"),
        "scripts/package writes elsewhere"
    );
    let version = std::fs::read_to_string(format!("{}/Cargo.toml", env!("CARGO_MANIFEST_DIR")))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .map(str::to_string)
        .unwrap();
    let line = format!("apt install ./dist/redlock-run_{version}-1_amd64.deb");
    assert!(doc("README.md").contains(&line), "README lacks `{line}`");
}
