#!/usr/bin/python3
"""Writes the IDX fuzzer's seed corpus, fuzz/idx/corpus/parse: small images and labels files,
gzip and plain, valid and each kind of invalid the reader names. Deterministic (gzip mtime 0), so
rerunning it changes nothing. Usage: fuzz/idx/make_corpus.py"""
import gzip
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "parse")


def idx(magic, dims, data):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + bytes(data)


def gz(data):
    return gzip.compress(data, compresslevel=9, mtime=0)


def pixels(n):
    return bytes((i * 7 + i // 251) & 0xFF for i in range(n))


images = idx(0x803, [2, 3, 3], pixels(18))
labels = idx(0x801, [5], [0, 9, 3, 3, 7])
one_28 = idx(0x803, [1, 28, 28], pixels(784))
bad_crc = bytearray(gz(images))
bad_crc[-8] ^= 1

corpus = {
    "images_plain": images,
    "images_gz": gz(images),
    "images_28x28_gz": gz(one_28),
    "labels_plain": labels,
    "labels_gz": gz(labels),
    "images_two_members_gz": gz(images[:7]) + gz(images[7:]),
    "labels_out_of_range": idx(0x801, [3], [1, 10, 2]),
    "images_truncated": images[:-3],
    "images_trailing_gz": gz(images + b"abc"),
    "images_two_dims": idx(0x802, [2, 9], pixels(18)),
    "images_float_type": idx(0xD03, [1, 1, 1], [0, 0, 0, 0]),
    "images_zero_rows": idx(0x803, [4, 0, 28], b""),
    "images_huge_header": idx(0x803, [0xFFFFFFFF] * 3, b""),
    "gz_bad_crc": bytes(bad_crc),
    "gz_no_trailer": gz(labels)[:-8],
    "gz_invalid_block": b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\x07\x00",
    "gz_then_garbage": gz(labels) + b"junk",
}

os.makedirs(OUT, exist_ok=True)
for name, data in corpus.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"{len(corpus)} files in {OUT}")
