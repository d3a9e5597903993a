#!/usr/bin/env python3
"""The lab's goals, measured in a real browser (docs/lab.md, "Measured").

For each round, alternating which goes first:
  - the CLI: `lingo ablation --no-png --json`, its wall time and each
    model's training seconds;
  - the lab: `lingo lab` started, the page opened in headless Chromium
    (through chromedriver, the browser already running), Train clicked:
    the seconds from starting `lingo lab` to the first heatmap drawn, from
    the click to the run finished, each model's training seconds (from the
    run's own results), and the slowest update the page drew.
Prints each round and the medians. Needs /usr/bin/chromium and
/usr/bin/chromedriver (Debian packages chromium, chromium-driver) and a
release build: `cargo build --release --bin lingo`.

    python3 benches/lab/measure.py --rounds 5 --screenshots docs/gallery
"""
import argparse, base64, json, os, signal, socket, statistics, subprocess, tempfile, time, urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """One headless Chromium session, driven through WebDriver."""

    def __init__(self):
        self.port = free_port()
        self.driver = subprocess.Popen(["/usr/bin/chromedriver", f"--port={self.port}"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/status")
                break
            except OSError:
                time.sleep(0.05)
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1500,1100", f"--user-data-dir={tempfile.mkdtemp()}"]
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome",
                                                 "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args}}}}
        self.session = ""
        self.session = "/session/" + self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        data = json.dumps(body or {}).encode() if method == "POST" else None
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{self.session}{path}", data=data,
                                         method=method, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request) as response:
            return json.load(response)["value"]

    def js(self, script):
        return self.call("POST", "/execute/sync", {"script": script, "args": []})

    def wait(self, condition, seconds=300, poll=0.01):
        start = time.time()
        while not self.js("return " + condition):
            if time.time() - start > seconds:
                raise SystemExit(f"timed out waiting for {condition}")
            time.sleep(poll)

    def screenshot(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.call("GET", "/screenshot")))

    def close(self):
        self.call("DELETE", "")
        self.driver.kill()


def cpu_seconds(name):
    """User and system CPU seconds so far of every process whose command line contains `name` (from /proc)."""
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if name.encode() not in f.read():
                    continue
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass  # the process ended meanwhile
    return total / os.sysconf("SC_CLK_TCK")


def process_cpu(pid):
    """User and system CPU seconds so far of process `pid`, its threads included."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cli_round(lingo, configs):
    with tempfile.TemporaryDirectory() as out:
        start, before = time.time(), os.times()
        result = subprocess.run([lingo, "ablation", "--no-png", "--json", "--out", out, "--configs", configs],
                                capture_output=True, text=True, check=True)
        wall, after = time.time() - start, os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    seconds = {line["config"]: line["train_seconds"] for line in lines if "config" in line and "train_seconds" in line}
    return wall, seconds, cpu


def lab_round(lingo, browser, configs, shots=None):
    with tempfile.TemporaryDirectory() as folder:
        start = time.time()
        lab = subprocess.Popen([lingo, "lab", "--json", "--dir", folder], stdout=subprocess.PIPE, text=True)
        url = json.loads(lab.stdout.readline())["url"]
        browser.call("POST", "/url", {"url": url + "#lesson=ablation&configs=" + configs})
        browser.wait("document.querySelectorAll('[data-choice]').length > 0")
        clicked = time.time()
        cpu = (cpu_seconds("chromium"), process_cpu(lab.pid))
        browser.js("document.getElementById('train').click()")
        browser.wait("document.querySelector('#attention svg.map rect') !== null")
        first = time.time() - start
        browser.wait("document.getElementById('status').dataset.state === 'finished'", poll=0.25)
        done = time.time() - clicked
        cpu = (cpu_seconds("chromium") - cpu[0], process_cpu(lab.pid) - cpu[1])
        slowest = browser.js("return parseFloat(document.getElementById('draw-ms').textContent.split('slowest ')[1])")
        with urllib.request.urlopen(url + "api/runs/1/events") as stream:
            events = [json.loads(line[5:]) for line in stream.read().decode().splitlines() if line.startswith("data:")]
        results = next(e for e in events if e["event"] == "finished")["results"]
        seconds = {run["config"]: run["seconds"] for run in results["runs"]}
        page = sum(len(urllib.request.urlopen(url + path).read())
                   for path in ["", "assets/lab.js", "assets/explore.js", "assets/plots.js", "assets/lab.css"])
        if shots:
            # The finished page, then the scrubber at the run's fifth epoch: the anti-diagonal forming.
            browser.screenshot(os.path.join(shots, "lab-ablation.png"))
            browser.js("const s = document.getElementById('scrubber'); s.value = Math.round(s.max * 5 / 16);"
                       "s.dispatchEvent(new Event('input'))")
            time.sleep(0.3)
            browser.screenshot(os.path.join(shots, "lab-ablation-forming.png"))
        lab.send_signal(signal.SIGINT)
        lab.wait(timeout=30)
        return first, done, seconds, slowest, page, len(events), cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lingo", default="target/release/lingo")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--configs", default="none,dot,additive", help="the ablation's models, as --configs takes them")
    parser.add_argument("--screenshots", help="a folder: the last round's page, finished and scrubbed back, saved there")
    args = parser.parse_args()
    browser = Browser()
    rows = []
    try:
        for r in range(args.rounds):
            shots = args.screenshots if r == args.rounds - 1 else None
            order = [("cli", lambda: cli_round(args.lingo, args.configs)),
                     ("lab", lambda: lab_round(args.lingo, browser, args.configs, shots))]
            got = dict((name, run()) for name, run in (order if r % 2 == 0 else order[::-1]))
            (wall, cli_seconds, cli_cpu), (first, done, lab_seconds, slowest, page, events, (browser_cpu, lab_cpu)) = \
                got["cli"], got["lab"]
            rate = {c: cli_seconds[c] / lab_seconds[c] for c in cli_seconds}
            rows.append((first, done, wall, rate, slowest, page, events, (cli_cpu, lab_cpu, browser_cpu)))
            print(f"round {r + 1}: first heatmap {first:.2f} s; ablation {done:.2f} s in the page, {wall:.2f} s "
                  f"by the CLI ({done / wall:.2f}x); lab steps/s / CLI's: "
                  + ", ".join(f"{c} {x:.2f}" for c, x in rate.items())
                  + f"; slowest update drawn {slowest:.1f} ms; first load {page} bytes; {events} events; "
                  f"CPU seconds: CLI {cli_cpu:.2f}, lab {lab_cpu:.2f}, browser {browser_cpu:.2f}")
    finally:
        browser.close()
    med = statistics.median
    print(f"\nmedians of {len(rows)} rounds ({os.cpu_count()} CPUs):")
    print(f"  lingo lab to the first heatmap: {med(r[0] for r in rows):.2f} s (goal < 3 s)")
    print(f"  the ablation in the page: {med(r[1] for r in rows):.2f} s, by the CLI {med(r[2] for r in rows):.2f} s: "
          f"{med(r[1] / r[2] for r in rows):.2f}x (goal < 2x)")
    for config in rows[0][3]:
        print(f"  {config}: the lab trains at {med(r[3][config] for r in rows):.2f} of the CLI's steps/s (goal >= 0.9)")
    print(f"  slowest update drawn: {med(r[4] for r in rows):.1f} ms (goal < 50 ms)")
    print(f"  first load: {rows[0][5]} bytes (goal < 500 KB)")
    print("  CPU seconds of the ablation: " + ", ".join(
        f"{name} {med(r[7][k] for r in rows):.2f}" for k, name in enumerate(["CLI", "lab", "browser (Chromium)"])))


if __name__ == "__main__":
    main()
