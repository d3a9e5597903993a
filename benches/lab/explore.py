#!/usr/bin/env python3
"""The explorer's goal, measured (docs/lab.md, "Explore a sentence"):
every interaction answered in under 100 ms.

Starts `lingo lab` on a folder holding copies of the checkpoints given,
trains the ablation there (its default settings), then for each of the
ablation's models and each checkpoint, in headless Chromium through
chromedriver:
  - translate: the Translate button clicked to the page drawn (the
    answer's translations, beam trace and every map of every layer and
    head), beam 5;
  - a cell clicked to its score drawn step by step;
  - a token hovered to its links lit;
  - the uniform probe applied to the page redrawn;
and, from Python, the same requests to the API alone, and every probe's
validation scores (once per model and step; the page keeps them).
Prints medians of --rounds runs of each, in milliseconds. Needs a release
build (`cargo build --release --bin lingo`), /usr/bin/chromium and
/usr/bin/chromedriver.

    python3 benches/lab/explore.py --checkpoint eng-spa-dot=real-dot/model.ckpt \\
        --checkpoint eng-spa-transformer=real-transformer/model.ckpt \\
        --sentence "We should leave the house before it starts to rain." --rounds 20
"""
import argparse, json, os, shutil, signal, statistics, subprocess, tempfile, time, urllib.parse, urllib.request

from measure import Browser


def post(base, path, body):
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST")
    start = time.perf_counter()
    with urllib.request.urlopen(request) as response:
        answer = json.load(response)
    return answer, 1000 * (time.perf_counter() - start)


# Seconds between two interactions, as a person leaves them: the machine's
# idle threads have gone back to sleep by the next one.
PAUSE = 0.2


def paused(ms):
    time.sleep(PAUSE)
    return ms


def median_ms(samples):
    return round(statistics.median(samples), 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lingo", default="target/release/lingo")
    parser.add_argument("--checkpoint", action="append", default=[], help="NAME=PATH, copied into the lab's folder as NAME.ckpt")
    parser.add_argument("--sentence", default="We should leave the house before it starts to rain.")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()

    folder = tempfile.mkdtemp()
    for spec in args.checkpoint:
        name, path = spec.split("=", 1)
        shutil.copy(path, os.path.join(folder, f"{name}.ckpt"))
    lab = subprocess.Popen([args.lingo, "lab", "--dir", folder, "--json"], stdout=subprocess.PIPE, text=True)
    base = json.loads(lab.stdout.readline())["url"].rstrip("/")
    browser = Browser()
    try:
        run, _ = post(base, "/api/runs", {"lesson": "ablation", "settings": {}})
        while json.load(urllib.request.urlopen(f"{base}/api/runs/{run['id']}"))["state"] == "running":
            time.sleep(0.2)
        listed = json.load(urllib.request.urlopen(f"{base}/api/models"))
        models = [(f"ablation {m['model']}", f"run:{m['run']}:{m['model']}", {"run": m["run"], "model": m["model"]}, m["examples"][0])
                  for m in listed["models"]]
        models += [(c[:-5], f"ckpt:{c}", {"checkpoint": c}, args.sentence) for c in listed["checkpoints"]]
        print(f"{'model':<28} {'api':>7} {'page':>7} {'cell':>7} {'hover':>7} {'probe':>7} {'probes':>8}  (ms, medians of {args.rounds})")
        for label, key, ref, sentence in models:
            api = [paused(post(base, "/api/explore", {"model": ref, "sentence": sentence, "beam": 5})[1]) for _ in range(args.rounds)]
            answer, _ = post(base, "/api/explore", {"model": ref, "sentence": sentence, "beam": 5})
            params = urllib.parse.urlencode({"x.model": key, "x.s": sentence, "x.beam": 5})
            browser.call("POST", "/url", {"url": "about:blank"})  # a fresh page for each model
            browser.call("POST", "/url", {"url": f"{base}/#{params}"})
            browser.wait("document.getElementById('x-message').dataset.ms !== undefined", 60)
            shown = browser.js("return document.querySelector('#x-main .translation').textContent")
            if shown != (answer["translations"][0]["text"] or "(nothing)"):
                raise SystemExit(f"{label}: the page shows {shown!r}, the API {answer['translations'][0]['text']!r}")
            page, cell, hover, probe = [], [], [], []
            has_map = "cross" in answer["maps"]
            for _ in range(args.rounds):
                time.sleep(PAUSE)
                browser.js("delete document.getElementById('x-message').dataset.ms; document.getElementById('x-go').click(); return null")
                browser.wait("document.getElementById('x-message').dataset.ms !== undefined", 60)
                page.append(float(browser.js("return document.getElementById('x-message').dataset.ms")))
                if has_map:
                    rows, cols = answer["maps"]["cross"]["dim"][2:]
                    time.sleep(PAUSE)
                    browser.js("delete document.getElementById('x-steps').dataset.ms; "
                               f"document.querySelector('#x-main svg.map rect[data-row=\"{rows // 2}\"][data-col=\"{cols // 2}\"]')"
                               ".dispatchEvent(new MouseEvent('click', {bubbles: true})); return null")
                    browser.wait("document.getElementById('x-steps').dataset.ms !== undefined", 60)
                    cell.append(float(browser.js("return document.getElementById('x-steps').dataset.ms")))
                    hover.append(float(browser.js(
                        "const t = performance.now(); document.querySelector('#x-main svg.links text.token[data-row=\"1\"]')"
                        ".dispatchEvent(new MouseEvent('mouseenter', {bubbles: true})); return performance.now() - t")))
                    time.sleep(PAUSE)
                    browser.js("const p = document.getElementById('x-probe'); p.value = 'uniform'; "
                               "delete document.getElementById('x-message').dataset.ms; p.dispatchEvent(new Event('change')); return null")
                    browser.wait("document.getElementById('x-message').dataset.ms !== undefined", 60)
                    probe.append(float(browser.js("return document.getElementById('x-message').dataset.ms")))
                    browser.js("const p = document.getElementById('x-probe'); p.value = 'unchanged'; "
                               "delete document.getElementById('x-message').dataset.ms; p.dispatchEvent(new Event('change')); return null")
                    browser.wait("document.getElementById('x-message').dataset.ms !== undefined", 60)
            probes = None
            if key.startswith("run:") and has_map:
                probes = median_ms([post(base, "/api/explore/probes", {"model": ref})[1] for _ in range(3)])
            show = lambda xs: f"{median_ms(xs):>7}" if xs else f"{'–':>7}"
            print(f"{label:<28} {show(api)} {show(page)} {show(cell)} {show(hover)} {show(probe)} {probes if probes is not None else '–':>8}"
                  f"  {answer['translations'][0]['text']!r}")
    finally:
        browser.close()
        lab.send_signal(signal.SIGTERM)
        lab.wait()
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
