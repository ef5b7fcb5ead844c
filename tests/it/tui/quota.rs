//! The `Q` line (`watch --quota-total`, issue 30) on a hand-built snapshot: the total, the
//! best split's isolated hit rate, the pooled one (with a pool lane), the equal split, the
//! signed isolation cost and the largest quotas first; why there is no split when there is
//! none; no line without `--quota-total`.

use litehit_core::projector::Capacity;
use litehit_live::snapshot::QuotaView;
use litehit_report::{QuotaError, QuotaPlan, TenantQuota};
use litehit_tui::app::App;

use crate::tui::render::{screen_rows, several_instances};

fn tenant(id: &str, quota_blocks: u64) -> TenantQuota {
    TenantQuota {
        instance_id: id.to_owned(),
        quota_blocks,
        quota_bytes: quota_blocks * 64,
        hit_tokens: 0,
        hit_rate: 0.0,
        input_tokens: 1,
    }
}

fn plan(pooled: bool) -> QuotaPlan {
    QuotaPlan {
        quota: true,
        quota_total_blocks: 150,
        quota_total_bytes: 150 * 64,
        quota_step_blocks: 1,
        quota_spare_blocks: 0,
        tenants: vec![
            tenant("batch", 5),
            tenant("team-a", 84),
            tenant("team-b", 46),
            tenant("team-c", 10),
            tenant("team-d", 5),
        ],
        isolated_hit_tokens: 6_597,
        isolated_hit_rate: 0.6597,
        pooled_hit_tokens: pooled.then_some(6_145),
        pooled_hit_rate: pooled.then_some(0.6145),
        equal_split_hit_tokens: 5_370,
        equal_split_hit_rate: 0.537,
        isolation_cost_rate: pooled.then_some(0.6145 - 0.6597),
        isolation_cost_tokens: pooled.then_some(-452),
    }
}

/// The screen's `Q` line, if it has one.
fn q_line(quota: Option<QuotaView>) -> Option<String> {
    let snap = litehit_live::LiveSnapshot {
        quota,
        ..several_instances()
    };
    let mut app = App::default();
    app.observe(&snap);
    screen_rows(&snap, &app, 200, 40)
        .into_iter()
        .find(|row| row.starts_with(" Q "))
}

#[test]
fn the_q_line_shows_the_best_split_beside_pooled_and_equal() {
    let line = q_line(Some(QuotaView {
        total: Capacity::Blocks(150),
        plan: Ok(plan(true)),
    }))
    .expect("a Q line");
    let expected = [
        " Q 150 blk",
        "isolated 65.97%",
        "pooled 61.45%",
        "equal split 53.70%",
        "isolation cost -4.52 pp",
        // Largest first, ties by id, four of them and how many more.
        "quotas team-a 84 blk, team-b 46 blk, team-c 10 blk, batch 5 blk, +1 more",
    ];
    let mut from = 0;
    for part in expected {
        let at = line[from..]
            .find(part)
            .unwrap_or_else(|| panic!("{part:?} after column {from} in {line:?}"));
        from += at + part.len();
    }

    // Without a pool lane: no pooled rate, no isolation cost.
    let line = q_line(Some(QuotaView {
        total: Capacity::Blocks(150),
        plan: Ok(plan(false)),
    }))
    .expect("a Q line");
    assert!(
        line.contains("isolated 65.97%") && line.contains("equal split 53.70%"),
        "{line}"
    );
    assert!(
        !line.contains("pooled") && !line.contains("isolation cost"),
        "{line}"
    );

    // No split yet: why.
    let line = q_line(Some(QuotaView {
        total: Capacity::Gigabytes(4.0),
        plan: Err(QuotaError::NoTenants),
    }))
    .expect("a Q line");
    assert!(
        line.contains("no split yet: the facts have no lane to give a quota to"),
        "{line}"
    );

    // Without --quota-total: no Q line.
    assert_eq!(q_line(None), None);
}
