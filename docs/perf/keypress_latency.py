#!/usr/bin/env python3
"""Key-to-screen latency of `litehit watch` while it catches up on a large trace, in tmux.

Usage: python3 docs/perf/keypress_latency.py TRACE [LITEHIT_BINARY] [--policy lru|lru,opt]
Starts the monitor in a 120x40 tmux session (with `--policy` as given, default lru), waits
until it is catching up, then presses `?` six times and times until the help overlay is on
screen (capture-pane polling).
"""
import subprocess, time, sys
args=sys.argv[1:]
policy="lru"
if "--policy" in args:
    at=args.index("--policy"); policy=args[at+1]; del args[at:at+2]
trace=args[0]
B=args[1] if len(args) > 1 else "target/release/litehit"
subprocess.run(["tmux","kill-session","-t","lat"],stderr=subprocess.DEVNULL)
subprocess.run(["tmux","new","-d","-s","lat","-x","120","-y","40",f"{B} watch {trace} --block-bytes 1MiB --policy {policy} --facts-out /tmp/lat_facts.csv"],check=True)
def screen():
    return subprocess.run(["tmux","capture-pane","-t","lat","-p"],capture_output=True,text=True).stdout
t0=time.time()
while "catching up" not in screen().lower():
    if time.time()-t0>20: print("never catching up"); print(screen()); sys.exit(1)
    time.sleep(0.01)
lat=[]
for i in range(6):
    s=screen()
    if "catching up" not in s.lower(): break
    start=time.perf_counter()
    subprocess.run(["tmux","send-keys","-t","lat","?"])
    while True:
        s=screen()
        if "what the numbers mean" in s.lower() or "numbers mean" in s.lower(): break
        if time.perf_counter()-start>2: print("no help shown"); print(s); break
    lat.append((time.perf_counter()-start)*1000)
    subprocess.run(["tmux","send-keys","-t","lat","Escape"])
    time.sleep(0.15)
print(f"--policy {policy}: latencies ms:", [round(x,1) for x in lat])
print(screen().splitlines()[0])
subprocess.run(["tmux","send-keys","-t","lat","q"])
time.sleep(1)
subprocess.run(["tmux","kill-session","-t","lat"],stderr=subprocess.DEVNULL)
