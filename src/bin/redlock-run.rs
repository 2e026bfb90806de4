//! `redlock-run [OPTIONS] --key NAME -- COMMAND [ARGS...]`

fn main() {
    std::process::exit(redlock::entry::redlock_run(std::env::args_os()).into());
}
