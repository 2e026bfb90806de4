//! `redlock history NAME --timeline`: the run history as a picture: one row per host,
//! time on the x axis (UTC), each run a bar from its start to its end, shaded by how
//! it ended, gaps left empty, a time axis with labels under it. Pure: the records, the
//! window and the width in, the text out (tested against golden pictures).

use crate::history::RunRecord;

/// How wide and how coloured to draw.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    /// Columns in all.
    pub width: usize,
    /// ANSI colours (a terminal without `NO_COLOR`); else plain characters.
    pub color: bool,
}

/// What a column of a row shows: the worst of the runs in it (the outcome table's
/// mark with the highest rank), or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
struct Cell(u8);

impl Cell {
    fn of(run: &RunRecord) -> Cell {
        Cell(run.ended().row().mark.map_or(0, |m| m.rank))
    }

    /// The glyph: coloured blocks on a terminal, letters in a pipe.
    fn draw(self, color: bool) -> &'static str {
        let mark = crate::outcome::ROWS
            .iter()
            .filter_map(|r| r.mark)
            .find(|m| m.rank == self.0);
        match (mark, color) {
            (None, _) => " ",
            (Some(m), true) => m.color,
            (Some(m), false) => m.letter,
        }
    }
}

/// Tick spacings to choose from (ms), and whether labels show the date.
/// The axis's tick spacings, finest first, and how each labels its ticks.
const TICKS: [(u64, Label); 18] = [
    (5_000, Label::Seconds),
    (10_000, Label::Seconds),
    (15_000, Label::Seconds),
    (30_000, Label::Seconds),
    (60_000, Label::Minutes),
    (2 * 60_000, Label::Minutes),
    (5 * 60_000, Label::Minutes),
    (10 * 60_000, Label::Minutes),
    (15 * 60_000, Label::Minutes),
    (30 * 60_000, Label::Minutes),
    (3_600_000, Label::Minutes),
    (2 * 3_600_000, Label::Minutes),
    (3 * 3_600_000, Label::Minutes),
    (6 * 3_600_000, Label::Minutes),
    (12 * 3_600_000, Label::Minutes),
    (86_400_000, Label::Date),
    (2 * 86_400_000, Label::Date),
    (7 * 86_400_000, Label::Date),
];

/// How a tick is labelled: `07:28:30`, `07:28`, `11-26`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Label {
    Seconds,
    Minutes,
    Date,
}

impl Label {
    /// The label of the tick at `ms`, and the columns it takes with a gap after it.
    fn of(self, ms: u64) -> String {
        let text = crate::report::rfc3339(ms);
        match self {
            Label::Seconds => text[11..19].to_string(),
            Label::Minutes => text[11..16].to_string(),
            Label::Date => text[5..10].to_string(),
        }
    }

    fn room(self) -> u128 {
        match self {
            Label::Seconds => 10,
            _ => 8,
        }
    }
}

/// Where a picture's columns fall: its window, the width of its bars and labels.
struct Frame {
    from_ms: u64,
    to_ms: u64,
    span: u64,
    bar_w: usize,
    label_w: usize,
    color: bool,
}

impl Frame {
    /// The column a time falls in.
    fn col_of(&self, t: u64) -> usize {
        let t = t.clamp(self.from_ms, self.to_ms) - self.from_ms;
        ((u128::from(t) * self.bar_w as u128 / u128::from(self.span)) as usize).min(self.bar_w - 1)
    }

    /// The frame's glyphs: bar, left and right corner, rule, tick.
    fn glyphs(&self) -> [&'static str; 5] {
        if self.color {
            ["│", "└", "┘", "─", "┬"]
        } else {
            ["|", "+", "+", "-", "+"]
        }
    }

    /// One host's row: the worst mark of its runs in each column.
    fn row(&self, host: &str, runs: &[&RunRecord]) -> String {
        let mut row = vec![Cell::default(); self.bar_w];
        for run in runs.iter().filter(|r| host_of(r) == host) {
            let mark = Cell::of(run);
            let (first, last) = (
                self.col_of(run.start_ms),
                self.col_of(end_of(run, self.to_ms)),
            );
            for cell in &mut row[first..=last] {
                *cell = (*cell).max(mark);
            }
        }
        let [bar, ..] = self.glyphs();
        let label: String = host.chars().take(self.label_w).collect();
        let mut out = format!("  {label:>w$} {bar}", w = self.label_w);
        for mark in row {
            out.push_str(mark.draw(self.color));
        }
        out.push_str(bar);
        out.push('\n');
        out
    }

    /// The time axis under the rows: ticks at a spacing that leaves room for their
    /// labels, and the labels.
    fn axis(&self) -> String {
        let (from_ms, to_ms, bar_w) = (self.from_ms, self.to_ms, self.bar_w);
        let [_, corner_l, corner_r, rule, tick_mark] = self.glyphs();
        let (every, label) = TICKS
            .iter()
            .copied()
            .find(|(every, label)| {
                (*every as u128 * bar_w as u128 / self.span as u128) >= label.room()
            })
            .unwrap_or(TICKS[TICKS.len() - 1]);
        let mut axis = vec![rule; bar_w];
        let mut labels = vec![' '; bar_w + 1];
        let mut tick = from_ms.div_ceil(every) * every;
        while tick <= to_ms {
            let col = self.col_of(tick);
            axis[col] = tick_mark;
            let text = label.of(tick);
            // A label that would run past the frame is left out (its tick stays).
            if col + text.len() <= bar_w + 1 {
                for (i, c) in text.chars().enumerate() {
                    labels[col + i] = c;
                }
            }
            tick += every;
        }
        let labels: String = labels.into_iter().collect();
        format!(
            "  {:w$} {corner_l}{}{corner_r}\n  {:w$}  {}\n",
            "",
            axis.concat(),
            "",
            labels.trim_end(),
            w = self.label_w
        )
    }
}

/// The column widths a fitted window is drawn at (ms): round ones, so that the axis
/// and "one column" read at a glance.
const COLUMN_WIDTHS: [u64; 21] = [
    1_000,
    2_000,
    5_000,
    10_000,
    15_000,
    20_000,
    30_000,
    60_000,
    2 * 60_000,
    5 * 60_000,
    10 * 60_000,
    15 * 60_000,
    20 * 60_000,
    30 * 60_000,
    3_600_000,
    2 * 3_600_000,
    3 * 3_600_000,
    6 * 3_600_000,
    12 * 3_600_000,
    86_400_000,
    2 * 86_400_000,
];

/// Where the window starts when none is asked for (`--timeline` without `--since`):
/// early enough for the oldest of `runs` that has a start, at the finest round column
/// width that holds it up to `to_ms`; a day when no run has a start.
pub fn fitted_from(runs: &[RunRecord], to_ms: u64, style: Style) -> u64 {
    let started: Vec<&RunRecord> = runs
        .iter()
        .filter(|r| r.start_ms > 0 && r.start_ms <= to_ms)
        .collect();
    let Some(oldest) = started.iter().map(|r| r.start_ms).min() else {
        return to_ms.saturating_sub(86_400_000);
    };
    let (_, bar_w) = widths(&hosts(&started), style);
    let need = to_ms - oldest;
    let column = COLUMN_WIDTHS
        .iter()
        .copied()
        .find(|c| c * bar_w as u64 > need)
        .unwrap_or(COLUMN_WIDTHS[COLUMN_WIDTHS.len() - 1]);
    to_ms.saturating_sub(column * bar_w as u64)
}

/// The hosts of `runs`, sorted, once each.
fn hosts(runs: &[&RunRecord]) -> Vec<String> {
    let mut hosts: Vec<String> = runs.iter().map(|r| host_of(r)).collect();
    hosts.sort();
    hosts.dedup();
    hosts
}

/// The width of the host labels and of the bars, for rows of `hosts`.
fn widths(hosts: &[String], style: Style) -> (usize, usize) {
    let label_w = hosts
        .iter()
        .map(|h| h.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(4, 20);
    // "  host │bars│": the bars take what the label and the frame leave.
    (label_w, style.width.saturating_sub(label_w + 5).max(10))
}

/// The picture of one lock's `runs` between `from_ms` and `to_ms`.
pub fn render(name: &str, runs: &[RunRecord], from_ms: u64, to_ms: u64, style: Style) -> String {
    let span = to_ms.saturating_sub(from_ms).max(1);
    let shown: Vec<&RunRecord> = runs
        .iter()
        .filter(|r| end_of(r, to_ms) >= from_ms && r.start_ms <= to_ms && r.start_ms > 0)
        .collect();
    let hosts = hosts(&shown);
    let (label_w, bar_w) = widths(&hosts, style);
    let frame = Frame {
        from_ms,
        to_ms,
        span,
        bar_w,
        label_w,
        color: style.color,
    };
    // A window under an hour says its seconds too (P14: "07:28 to 07:29" for a minute).
    let seconds = span < 3_600_000;
    let mut out = format!(
        "{name}: {} to {} UTC, one column {}\n",
        stamp(from_ms, seconds),
        stamp(to_ms, seconds),
        crate::report::human(std::time::Duration::from_millis(span / bar_w as u64))
    );
    if shown.is_empty() {
        out.push_str("  no runs in this window\n");
        return out;
    }
    // `--once-per`: the newest run's slot, in its zone for a calendar period.
    if let Some(slot) = shown
        .iter()
        .max_by_key(|r| r.start_ms)
        .and_then(|r| r.slot_words())
    {
        out.push_str(&format!("  newest run's slot: {slot}\n"));
    }
    for host in &hosts {
        out.push_str(&frame.row(host, &shown));
    }
    out.push_str(&frame.axis());
    out
}

/// The legend under the pictures, its entries wrapped to `width` columns (newcomer-4
/// P14: one 130-column line wrapped by the terminal mid-entry).
pub fn legend(color: bool, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::from(" ");
    let mut used = 1;
    for mark in crate::outcome::LEGEND.iter().filter_map(|o| o.row().mark) {
        let shown = 2 + mark.legend.chars().count();
        if used > 1 && used + 3 + shown > width {
            out.push_str(&line);
            out.push('\n');
            line = String::from(" ");
            used = 1;
        }
        let gap = if used > 1 { "   " } else { " " };
        line.push_str(&format!(
            "{gap}{} {}",
            Cell(mark.rank).draw(color),
            mark.legend
        ));
        used += gap.len() + shown;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

fn host_of(run: &RunRecord) -> String {
    run.who.host_text()
}

/// A run's end: recorded; for a run in progress, the window's end; for a vanished run
/// (no end recorded, its lease gone), the earliest its lease can have ended: one ttl
/// after its start, as it said when it started (P13: not a bar that runs on to now).
fn end_of(run: &RunRecord, to_ms: u64) -> u64 {
    if run.vanished {
        run.start_ms + run.ttl_ms.unwrap_or(0)
    } else if run.running || run.end_ms < run.start_ms {
        to_ms
    } else {
        run.end_ms
    }
}

/// `2026-11-21 05:44` (UTC).
fn stamp(ms: u64, seconds: bool) -> String {
    let text = crate::report::rfc3339(ms);
    let end = if seconds { 19 } else { 16 };
    format!("{} {}", &text[..10], &text[11..end])
}

/// How to draw on this stdout: a terminal's width and colours (unless `NO_COLOR`);
/// in a pipe, `$COLUMNS` or 80 columns, plain characters.
pub fn style() -> Style {
    use std::io::IsTerminal;
    let terminal = std::io::stdout().is_terminal();
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| (20..=1000).contains(c));
    let width = if terminal {
        crate::report::terminal_width_of(1)
    } else {
        columns.unwrap_or(80)
    };
    Style {
        width,
        color: terminal && !no_color,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::holder::Who;

    const T0: u64 = 1_795_651_200_000; // 2026-11-26 00:00:00 UTC

    fn run(host: &str, start_min: u64, minutes: u64, status: i64, lost: bool) -> RunRecord {
        let status = Some(status);
        RunRecord {
            token: "t".into(),
            who: Who {
                host: Some(host.into()),
                ..Who::default()
            },
            start_ms: T0 + start_min * 60_000,
            end_ms: T0 + (start_min + minutes) * 60_000,
            status,
            lost,
            ..RunRecord::default()
        }
    }

    fn history() -> Vec<RunRecord> {
        vec![
            run("web-1", 60, 30, 0, false),
            run("web-2", 180, 20, 3, false),
            run("web-1", 300, 90, 79, true),
            run("web-2", 500, 30, 124, true),
            run("db-1", 900, 60, 0, false),
            RunRecord {
                running: true,
                ..run("db-1", 1300, 0, 0, false)
            },
        ]
    }

    /// The fixed history's day without colour, `width` columns wide.
    fn plain(width: usize) -> String {
        let style = Style {
            width,
            color: false,
        };
        render("nightly", &history(), T0, T0 + 86_400_000, style)
    }

    /// Without `--since` the window reaches the oldest run at a round column width
    /// (60 columns: 50 of bars; the oldest run 23 h back needs 30 m columns), and is a
    /// day when no run has a start.
    #[test]
    fn a_fitted_window_holds_the_oldest_run_at_a_round_column() {
        let style = Style {
            width: 60,
            color: false,
        };
        let to = T0 + 86_400_000;
        assert_eq!(fitted_from(&history(), to, style), to - 50 * 30 * 60_000);
        assert_eq!(fitted_from(&[], to, style), T0);
        let recent = [run("web-1", 1430, 1, 0, false)];
        assert_eq!(fitted_from(&recent, to, style), to - 50 * 15_000);
    }

    #[test]
    fn golden_plain_60_columns() {
        let got = plain(60);
        let want = "\
nightly: 2026-11-26 00:00 to 2026-11-27 00:00 UTC, one column 28m 48s
   db-1 |                               ###           :::::|
  web-1 |  ##      LLLL                                    |
  web-2 |      x          MM                               |
        ++-----------+------------+-----------+-----------++
         00:00       06:00        12:00       18:00
";
        assert_eq!(got, want, "\n{got}");
    }

    #[test]
    fn golden_plain_100_columns() {
        let got = plain(100);
        let want = "\
nightly: 2026-11-26 00:00 to 2026-11-27 00:00 UTC, one column 16m
   db-1 |                                                        #####                    :::::::::|
  web-1 |   ###            LLLLLLL                                                                 |
  web-2 |           xx                  MMM                                                        |
        ++----------+----------+----------+-----------+----------+----------+----------+----------++
         00:00      03:00      06:00      09:00       12:00      15:00      18:00      21:00
";
        assert_eq!(got, want, "\n{got}");
    }

    #[test]
    fn every_line_fits_the_width_and_colour_only_on_request() {
        for width in [40, 60, 80, 100, 200] {
            let got = render(
                "nightly",
                &history(),
                T0,
                T0 + 86_400_000,
                Style {
                    width,
                    color: false,
                },
            );
            for line in got.lines().skip(1) {
                assert!(line.chars().count() <= width, "{width}: {line:?}");
            }
            assert!(!got.contains('\x1b'));
        }
        let tty = render(
            "nightly",
            &history(),
            T0,
            T0 + 86_400_000,
            Style {
                width: 80,
                color: true,
            },
        );
        assert!(tty.contains("\x1b[32m█\x1b[0m") && tty.contains("\x1b[35m█\x1b[0m"));
    }

    #[test]
    fn a_window_without_runs_says_so() {
        let got = render(
            "nightly",
            &history(),
            T0 - 2 * 86_400_000,
            T0 - 86_400_000,
            Style {
                width: 60,
                color: false,
            },
        );
        assert!(got.ends_with("  no runs in this window\n"), "{got}");
    }
}
