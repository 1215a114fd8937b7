"""Renders the synthetic "behaviour" video set for jobs/data/video_behaviour.sh, with no
download: one Fashion-MNIST garment (a sprite) moves over a fixed, smooth, low-contrast
background, and every labelled frame says what it is doing: rest, left, right, up or down
(2 px/frame, wrapping around the 64x64 canvas). The labels are imbalanced on purpose
(rest 0.55, left 0.15, right 0.13, up 0.10, down 0.07), as real behaviour annotations are,
so class weights and macro-F1 matter.

Each video (64x64 gray, 25 fps) holds 8 trials of 40-80 labelled frames, one after
another with 10-20 unlabelled gap frames between them (the sprite idles or wanders; no
label rows). The first trial starts at frame 0 and the last ends at the last frame, so a
clip importer meets both ends of a video. A trial is a run of behaviour segments of
17-30 frames, each label drawn independently. A frame's label is the motion that brought
the sprite to where it is in that frame.

Frames are piped raw to the ffmpeg CLI. Containers alternate so an importer sees several:
video k (1-based) is .avi (MPEG-4 part 2) when k % 6 == 0, else .mkv (H.264) when
k % 4 == 0, else .mp4 (H.264).

  python render_videos.py OUT_DIR [TRAIN_VIDEOS] [TEST_VIDEOS] [SEED] [FASHION_MNIST_DIR]
      (defaults 24 8 1234 /usr/share/datasets/fashion-mnist)

Writes OUT_DIR/videos/{train,test}-NN.{mp4,mkv,avi} and OUT_DIR/{train,test}.csv with the
header video,trial,frame,label (video relative to the CSV's directory, trial a globally
unique id "train-03-t5", frame 0-based in the video). Deterministic for a seed (pixels and,
with the same ffmpeg build, bytes). About 10 s for the defaults on 2 cores.
"""
import csv, gzip, os, subprocess, sys

import numpy as np

SIZE, FPS, SPRITE, STEP = 64, 25, 28, 2
TRIALS = 8
TRIAL_FRAMES = (40, 80)
SEGMENT_FRAMES = (17, 30)
GAP_FRAMES = (10, 20)
NOISE_SIGMA = 4.0
LABELS = ["rest", "left", "right", "up", "down"]
PROBS = [0.55, 0.15, 0.13, 0.10, 0.07]
MOVES = {"rest": (0, 0), "left": (0, -STEP), "right": (0, STEP), "up": (-STEP, 0), "down": (STEP, 0)}


def read_images(directory):
    with gzip.open(os.path.join(directory, "train-images-idx3-ubyte.gz"), "rb") as f:
        data = f.read()
    n, h, w = (int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(3))
    return np.frombuffer(data, dtype=np.uint8, offset=16).reshape(n, h, w)


def background(rng):
    # White noise low-passed in the frequency domain (a Gaussian of ~6 px): smooth blobs,
    # periodic like the canvas, then stretched to 20..60.
    f = np.fft.fftfreq(SIZE)
    gain = np.exp(-(f[:, None] ** 2 + f[None, :] ** 2) * (2 * np.pi * 6.0) ** 2 / 2)
    smooth = np.fft.ifft2(np.fft.fft2(rng.standard_normal((SIZE, SIZE))) * gain).real
    smooth = (smooth - smooth.min()) / (smooth.max() - smooth.min() + 1e-12)
    return 20.0 + 40.0 * smooth


def sprite_layers(image):
    # The garment, brightened to stand out (90..255) and blended by its own intensity,
    # placed at the canvas' top-left corner; np.roll moves it (toroidally).
    value, alpha = np.zeros((SIZE, SIZE)), np.zeros((SIZE, SIZE))
    img = image.astype(np.float64)
    value[:SPRITE, :SPRITE] = 90.0 + 165.0 * img / 255.0
    alpha[:SPRITE, :SPRITE] = np.clip(img / 96.0, 0.0, 1.0)
    return value, alpha


def trial_labels(rng):
    # Segments of 17-30 frames until the trial holds 40-80: below 40 another is needed, from
    # 40 on one more comes with probability 1/2 if it fits.
    labels = []
    while True:
        n = int(rng.integers(SEGMENT_FRAMES[0], SEGMENT_FRAMES[1] + 1))
        if len(labels) >= TRIAL_FRAMES[0] and (len(labels) + n > TRIAL_FRAMES[1] or rng.random() < 0.5):
            return labels
        labels += [LABELS[rng.choice(len(LABELS), p=PROBS)]] * n


def script(rng):
    # The whole video as (label or None, move) per frame.
    frames = []
    for t in range(TRIALS):
        if t > 0:
            for _ in range(int(rng.integers(GAP_FRAMES[0], GAP_FRAMES[1] + 1))):
                frames.append((None, (0, 0) if rng.random() < 0.5 else MOVES[LABELS[rng.integers(1, 5)]]))
        frames += [((t, lab), MOVES[lab]) for lab in trial_labels(rng)]
    return frames


def container(k):
    if k % 6 == 0:
        return "avi", ["-c:v", "mpeg4", "-q:v", "3"]
    return ("mkv" if k % 4 == 0 else "mp4"), ["-c:v", "libx264", "-preset", "veryfast", "-crf", "18"]


def render(path, codec, bg, value, alpha, frames, rng):
    cmd = ["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "gray", "-s", f"{SIZE}x{SIZE}",
           "-r", str(FPS), "-i", "-", *codec, "-pix_fmt", "yuv420p", "-threads", "1",
           "-fflags", "+bitexact", "-flags:v", "+bitexact", "-map_metadata", "-1", path]
    pos = rng.integers(0, SIZE, size=2)
    out = np.empty((len(frames), SIZE, SIZE), dtype=np.uint8)
    for i, (_, move) in enumerate(frames):
        if i > 0:
            pos = (pos + move) % SIZE
        v, a = np.roll(value, tuple(pos), axis=(0, 1)), np.roll(alpha, tuple(pos), axis=(0, 1))
        frame = bg * (1 - a) + v * a + rng.normal(0.0, NOISE_SIGMA, (SIZE, SIZE))
        out[i] = np.clip(np.rint(frame), 0, 255)
    subprocess.run(cmd, input=out.tobytes(), check=True)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    counts = {"train": int(sys.argv[2]) if len(sys.argv) > 2 else 24,
              "test": int(sys.argv[3]) if len(sys.argv) > 3 else 8}
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1234
    images = read_images(sys.argv[5] if len(sys.argv) > 5 else "/usr/share/datasets/fashion-mnist")
    os.makedirs(os.path.join(out, "videos"), exist_ok=True)
    for split, n in counts.items():
        hist, total, rows = dict.fromkeys(LABELS, 0), 0, []
        for i in range(n):
            # One stream per video: a video's pixels do not depend on how many others there are.
            rng = np.random.default_rng([seed, 0 if split == "train" else 1, i])
            ext, codec = container(i + 1)
            name = f"videos/{split}-{i:02d}.{ext}"
            frames = script(rng)
            value, alpha = sprite_layers(images[rng.integers(len(images))])
            render(os.path.join(out, name), codec, background(rng), value, alpha, frames, rng)
            for f, (tag, _) in enumerate(frames):
                if tag is not None:
                    rows.append((name, f"{split}-{i:02d}-t{tag[0]}", f, tag[1]))
                    hist[tag[1]] += 1
            total += len(frames)
        with open(os.path.join(out, split + ".csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["video", "trial", "frame", "label"])
            w.writerows(rows)
        shares = ", ".join(f"{k} {v} ({v / max(1, len(rows)):.0%})" for k, v in hist.items())
        print(f"render_videos: {split}: {n} videos, {total} frames, {len(rows)} labelled in "
              f"{n * TRIALS} trials; {shares}")


if __name__ == "__main__":
    main()
