//! `--cache-output` (issue 31 §2): a record's generated output (token ids or text) becomes
//! its row's `output_keys`, the full blocks of prompt + output (without the last output
//! token) past the prompt's, chained on it; nothing changes without the flag; the summary
//! says how often a prompt continues an earlier prompt + output.

use serde_json::{Value, json};

use super::trace::{Fixture, chat_line, chatml, input_len, keys};
use crate::common::cli_bin::{failed, ok, run_in, write_file};

const BLOCK: usize = 4;

fn output_keys(row: &Value) -> Option<Vec<i64>> {
    row.get("output_keys").map(|list| {
        list.as_array()
            .unwrap()
            .iter()
            .map(|key| key.as_i64().unwrap())
            .collect()
    })
}

/// The tokenizer's own ids of `text`, through the `tokenizers` crate directly.
fn ids(fixture: &Fixture, text: &str, add_special: bool) -> Vec<u32> {
    let tokenizer = tokenizers::Tokenizer::from_file(fixture.path("tokenizer.json")).unwrap();
    tokenizer
        .encode(text, add_special)
        .unwrap()
        .get_ids()
        .to_vec()
}

#[test]
fn output_keys_continue_the_prompts_chain_and_nothing_changes_without_the_flag() {
    let fixture = Fixture::new();
    let prompt: Vec<u32> = (5..15).collect(); // 10 tokens: 2 full blocks and 2 more
    let output: Vec<u32> = (20..28).collect(); // 8 tokens, the last never cached
    let cached: Vec<u32> = prompt.iter().chain(&output[..7]).copied().collect();
    let completion_prompt = ids(&fixture, "w9 w10 w11", true);
    let completion_cached: Vec<u32> = completion_prompt
        .iter()
        .chain(&ids(&fixture, "w1 w2 w3 w4 w5", false)[..4])
        .copied()
        .collect();
    let chat = [("user", "w1 w2 w3")];
    let chat_cached: Vec<u32> = ids(&fixture, &chatml(&chat, true), false)
        .into_iter()
        .chain(
            ids(&fixture, "w40 w41 w42 w43 w44 w45", false)[..5]
                .iter()
                .copied(),
        )
        .collect();
    let lines = [
        json!({"request_id": "ids", "prompt_token_ids": prompt, "output_token_ids": output}),
        json!({"request_id": "text", "prompt": "w9 w10 w11",
               "choices": [{"text": "w1 w2 w3 w4 w5"}]}),
        serde_json::from_str(&chat_line(
            "chat",
            &chat,
            &json!({"choices": [{"message": {"content": "w40 w41 w42 w43 w44 w45"}}]}),
        ))
        .unwrap(),
        json!({"request_id": "none", "prompt": "w1 w2 w3 w4 w5 w6"}),
        // The same sequences as prompts: their keys are what the outputs must continue to.
        json!({"request_id": "ids-as-prompt", "prompt_token_ids": cached}),
        json!({"request_id": "text-as-prompt", "prompt_token_ids": completion_cached}),
        json!({"request_id": "chat-as-prompt", "prompt_token_ids": chat_cached}),
    ];
    let log: Vec<String> = lines.iter().map(Value::to_string).collect();
    let rows = fixture.trace(&log.join("\n"), &["--cache-output"]);
    for (with_output, as_prompt) in [(0, 4), (1, 5), (2, 6)] {
        let row = &rows[with_output];
        let chain: Vec<i64> = [keys(row), output_keys(row).unwrap()].concat();
        assert_eq!(chain, keys(&rows[as_prompt]), "{row}");
        assert_eq!(
            output_keys(row).unwrap().len(),
            usize::try_from(input_len(&rows[as_prompt])).unwrap() / BLOCK - keys(row).len(),
        );
    }
    assert_eq!(output_keys(&rows[0]).unwrap().len(), 2);
    assert_eq!(output_keys(&rows[3]), None, "a record without an output");

    // Without the flag: the same rows without `output_keys`, and the very bytes of the log
    // without its outputs.
    let plain = fixture.trace(&log.join("\n"), &[]);
    for (row, plain) in rows.iter().zip(&plain) {
        let mut row = row.clone();
        row.as_object_mut().unwrap().remove("output_keys");
        assert_eq!(&row, plain);
    }
    let plain_bytes = std::fs::read(fixture.path("trace.jsonl")).unwrap();
    let stripped: Vec<String> = lines
        .iter()
        .map(|line| {
            let mut line = line.clone();
            let object = line.as_object_mut().unwrap();
            object.remove("output_token_ids");
            object.remove("choices");
            line.to_string()
        })
        .collect();
    fixture.trace(&stripped.join("\n"), &[]);
    assert_eq!(
        std::fs::read(fixture.path("trace.jsonl")).unwrap(),
        plain_bytes
    );

    // --output-field names another place; a bad output is an error naming its field.
    let other = json!({"prompt_token_ids": prompt, "reply": {"ids": output}}).to_string();
    let rows = fixture.trace(&other, &["--cache-output", "--output-field", "reply.ids"]);
    assert_eq!(output_keys(&rows[0]).unwrap().len(), 2);
    let bad = json!({"prompt": "w1", "output_token_ids": [-1]}).to_string();
    let log_path = write_file(fixture.dir.path(), "bad.jsonl", &bad);
    let mut args = fixture.trace_args(&log_path, &fixture.path("bad.out"));
    args.push("--cache-output".to_owned());
    let run = run_in(None, args);
    let message = failed(&run);
    assert!(message.contains("output_token_ids"), "{message}");
    assert!(message.contains(":1:"), "{message}");
}

/// A next turn re-sending the assistant's reply hits the reply's blocks with
/// `--cache-output`; the summary counts the next turns and those re-sending the output.
#[test]
fn a_next_turn_hits_the_cached_reply_and_the_summary_counts_it() {
    let fixture = Fixture::new();
    let turn1 = [("system", "w1 w2 w3"), ("user", "w4 w5 w6 w7 w8 w9")];
    let reply = "w10 w11 w12 w13 w14 w15";
    let turn2 = |reply: &str| {
        chat_line(
            "t2",
            &[
                turn1[0],
                turn1[1],
                ("assistant", reply),
                ("user", "w16 w17"),
            ],
            &json!({}),
        )
    };
    let log = [
        chat_line(
            "t1",
            &turn1,
            &json!({"choices": [{"message": {"content": reply}}]}),
        ),
        turn2(reply),
        // A re-rendered reply (another word at its end): the conversation goes on, but its
        // output's last blocks are not the ones cached.
        turn2("w10 w11 w99 w13 w14 w15"),
    ]
    .join("\n");
    let len1 = fixture.count(&chatml(&turn1, true), false);
    assert_eq!(len1 % BLOCK as u64, 1);
    // Cached: turn 1's prompt and 5 of the reply's 6 tokens, one block more than its prompt.
    let plain = fixture.trace(&log, &[]);
    assert_eq!(keys(&plain[0]).len() as u64, len1 / 4);
    let ideal = len1 / 4;
    assert_eq!(
        fixture.hits(&fixture.path("trace.jsonl")),
        [0, ideal, ideal]
    );
    fixture.trace(&log, &["--cache-output"]);
    assert_eq!(
        fixture.hits(&fixture.path("trace.jsonl")),
        [0, ideal + 1, ideal]
    );

    let log_path = write_file(fixture.dir.path(), "turns.jsonl", &log);
    let mut args = fixture.trace_args(&log_path, &fixture.path("t.jsonl"));
    args.retain(|arg| arg != "--quiet");
    args.push("--cache-output".to_owned());
    let run = ok(run_in(None, args));
    let line = "litehit: --cache-output: 1 of 3 requests carried an output (1 full output \
                blocks cached); 2 prompts continue an earlier request's prompt + output, 1 of \
                them re-sending all its full blocks";
    assert!(run.stderr.contains(line), "{}", run.stderr);
    let run = ok(run_in(
        None,
        [
            "replay",
            "--format",
            "openai",
            log_path.to_str().unwrap(),
            "--tokenizer",
            fixture.path("tokenizer.json").to_str().unwrap(),
            "--chat-template",
            fixture.path("chat.jinja").to_str().unwrap(),
            "--block-size",
            "4",
            "--line-time",
            "--cache-output",
            "--out",
            fixture.path("replayed").to_str().unwrap(),
        ],
    ));
    assert!(run.stderr.contains(line), "{}", run.stderr);
}
