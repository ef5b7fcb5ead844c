//! `b` (block bytes): each change is one entry of the notice log (`!`), at the time it was
//! made — also a change back to a value used before — and a value that stays is not logged
//! again however many other notices come in between.

use std::time::Duration;

use litehit_live::LiveSnapshot;
use litehit_live::tail::TailNotice;
use litehit_tui::app::App;

fn block_bytes_entries(app: &App) -> Vec<(u64, String)> {
    app.notice_log
        .iter()
        .filter(|notice| notice.text.contains("per block (b)"))
        .map(|notice| (notice.at.as_secs(), notice.text.clone()))
        .collect()
}

#[test]
fn tui_logs_every_block_bytes_change_once() {
    let mut app = App::default();
    let mut snap = LiveSnapshot::default();
    for (uptime_s, block_bytes) in [(1, None), (5, Some(1 << 20)), (9, Some(2 << 20))] {
        snap.uptime = Duration::from_secs(uptime_s);
        snap.assumed_block_bytes = block_bytes;
        app.observe(&snap);
    }
    // Many other notices while 2 MiB stays: it is not logged again.
    for second in 10..30 {
        snap.uptime = Duration::from_secs(second * 10);
        let notice = if second % 2 == 0 {
            TailNotice::Truncated
        } else {
            TailNotice::Replaced
        };
        snap.source.last_notice = Some((notice, Duration::ZERO));
        app.observe(&snap);
    }
    // Back to 1 MiB: logged again, at its own time.
    snap.uptime = Duration::from_secs(400);
    snap.assumed_block_bytes = Some(1 << 20);
    app.observe(&snap);
    app.observe(&snap);
    // Quickly back and forth: each change is said.
    for (uptime_s, block_bytes) in [(401, 2 << 20), (402, 1 << 20)] {
        snap.uptime = Duration::from_secs(uptime_s);
        snap.assumed_block_bytes = Some(block_bytes);
        app.observe(&snap);
    }
    let entries = block_bytes_entries(&app);
    let times: Vec<u64> = entries.iter().map(|entry| entry.0).collect();
    assert_eq!(times, [5, 9, 400, 401, 402], "{entries:?}");
    assert!(entries[0].1.contains("1.00 MiB"), "{entries:?}");
    assert!(entries[1].1.contains("2.00 MiB"), "{entries:?}");
    assert!(entries[2].1.contains("1.00 MiB"), "{entries:?}");
    assert!(entries[3].1.contains("2.00 MiB"), "{entries:?}");
    assert!(entries[4].1.contains("1.00 MiB"), "{entries:?}");
}
