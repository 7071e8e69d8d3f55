"""User images: decoding every layout, clear errors for bad files (model input: tests/test_preprocess.py)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from infsa_viz.images import MAX_IMAGE_DECODED_BYTES, MAX_IMAGE_PIXELS, decode_image, image_header, image_size


def png(array: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".png", array)
    assert ok
    return buf.tobytes()


@pytest.mark.parametrize("shape", [(30, 40), (30, 40, 3), (30, 40, 4)])
def test_gray_rgb_rgba_decode(shape):
    image = decode_image(png(np.full(shape, 100, np.uint8)))
    assert image.shape[:2] == (30, 40) and image.dtype == np.uint8
    assert image.ndim == (2 if len(shape) == 2 else 3)


def test_sixteen_bit_png_is_scaled():
    image = decode_image(png(np.full((4, 4), 65535, np.uint16)))
    assert image.dtype == np.uint8 and image.max() == 255


@pytest.mark.parametrize("data,match", [(b"", "empty"), (b"GIF89a not really", "not a readable image")])
def test_bad_files_give_clear_errors(data, match):
    with pytest.raises(ValueError, match=match):
        decode_image(data, name="upload.png")


def test_limits():
    with pytest.raises(ValueError, match="over the limit of 10 bytes"):
        decode_image(png(np.zeros((8, 8), np.uint8)), max_bytes=10)
    with pytest.raises(ValueError, match="pixels is over the limit"):
        decode_image(png(np.zeros((100, 100), np.uint8)), max_pixels=100)


@pytest.mark.parametrize("ext", [".png", ".jpg", ".bmp"])
@pytest.mark.parametrize("shape", [(3, 5), (17, 11, 3)])
def test_image_size_reads_the_header(ext, shape):
    ok, buf = cv2.imencode(ext, np.zeros(shape, np.uint8))
    assert ok
    assert image_size(buf.tobytes()) == (shape[1], shape[0])


def test_progressive_jpeg_size():
    ok, buf = cv2.imencode(".jpg", np.zeros((9, 21, 3), np.uint8), [cv2.IMWRITE_JPEG_PROGRESSIVE, 1])
    assert ok and image_size(buf.tobytes()) == (21, 9)


def _bomb_png(width: int, height: int, *, depth: int = 8, colour: int = 0) -> bytes:
    """A PNG whose header announces width×height pixels (gray 8-bit by default): the pixels are never written."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def test_decompression_bomb_is_refused_from_its_header(monkeypatch):
    import infsa_viz.images as images

    def never(*_args, **_kwargs):  # the decoder must not even be called
        raise AssertionError("decoded a bomb")

    monkeypatch.setattr(cv2, "imdecode", never)
    with pytest.raises(ValueError, match="25000x25000 pixels is over the limit"):
        images.decode_image(_bomb_png(25000, 25000), name="bomb.png")


def test_truncated_image_is_refused():
    data = png(np.full((40, 40), 7, np.uint8))
    with pytest.raises(ValueError, match="not a readable image"):
        decode_image(data[:30], name="cut.png")


def test_decoded_budget_is_counted_from_headers(tmp_path):
    from infsa_viz.images import check_decoded_budget

    paths = []
    for i in range(3):
        path = tmp_path / f"{i}.png"
        path.write_bytes(_bomb_png(1000, 1000))  # 3 MB decoded each, a few bytes on disk
        paths.append(path)
    assert check_decoded_budget(paths) == 9_000_000
    with pytest.raises(ValueError, match=r"the first 2 images .* more than 5,000,000 bytes .*--n-images 1 or less"):
        check_decoded_budget(paths, budget=5_000_000)


def test_decoded_bytes_count_channels_and_sample_width(monkeypatch):
    """A 16-bit RGBA PNG under the pixel limit is refused by the bytes it decodes to, from its header."""
    monkeypatch.setattr(cv2, "imdecode", lambda *_: pytest.fail("decoded a bomb"))
    width, height = 5000, 4000  # 20 MP: under the pixel limit
    assert width * height < MAX_IMAGE_PIXELS
    expected = width * height * 4 * 2
    assert expected > MAX_IMAGE_DECODED_BYTES
    with pytest.raises(ValueError, match=rf"rgba16.png: 5000x4000 pixels x 4 channels x 2 byte\(s\) decode to "
                                         rf"{expected:,} bytes, over the limit of {MAX_IMAGE_DECODED_BYTES:,}"):
        decode_image(_bomb_png(width, height, depth=16, colour=6), name="rgba16.png")


@pytest.mark.parametrize(("shape", "dtype", "channels", "sample_bytes"), [
    ((6, 9), np.uint8, 1, 1), ((6, 9, 3), np.uint8, 3, 1), ((6, 9, 4), np.uint16, 4, 2), ((6, 9), np.uint16, 1, 2)])
def test_the_header_declares_what_the_decoder_allocates(shape, dtype, channels, sample_bytes):
    data = png(np.zeros(shape, dtype))
    header = image_header(data)
    assert (header.width, header.height, header.channels, header.sample_bytes) == (9, 6, channels, sample_bytes)
    decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    assert header.decoded_bytes == decoded.nbytes
    with pytest.raises(ValueError, match="over the limit"):
        decode_image(data, max_decoded_bytes=decoded.nbytes - 1)
    assert decode_image(data, max_decoded_bytes=decoded.nbytes).shape[:2] == (6, 9)


def test_sixteen_bit_rounds_as_before():
    values = np.arange(65536, dtype=np.uint16).reshape(256, 256)
    expected = (values.astype(np.float64) / 65535 * 255 + 0.5).astype(np.uint8)
    np.testing.assert_array_equal(decode_image(png(values)), expected)


# ----------------------------------------------------------------------------- EXIF orientation
from tests.exif_files import encode, with_orientation  # noqa: E402

from infsa_viz.images import apply_orientation, exif_orientation  # noqa: E402

#: What each EXIF orientation asks of the stored pixels (numpy, written out independently of the library).
def _transpose(a: np.ndarray) -> np.ndarray:
    return np.transpose(a, (1, 0, *range(2, a.ndim)))


UPRIGHT = {1: lambda a: a, 2: np.fliplr, 3: lambda a: np.rot90(a, 2), 4: np.flipud, 5: _transpose,
           6: lambda a: np.rot90(a, -1), 7: lambda a: np.rot90(_transpose(a), 2), 8: lambda a: np.rot90(a, 1)}


def _asymmetric(shape) -> np.ndarray:
    """An image whose every flip and turn is different: a gradient plus a bright corner block."""
    h, w = shape[:2]
    image = (np.arange(h)[:, None] * 3 + np.arange(w)[None, :] * 7) % 200
    image[:5, :9] = 255
    return (image if len(shape) == 2 else np.stack([image, image // 2, 255 - image], -1)).astype(np.uint8)


@pytest.mark.parametrize("orientation", range(1, 9))
@pytest.mark.parametrize("ext,shape,order", [(".png", (30, 44), "MM"), (".png", (30, 44, 3), "II"),
                                             (".jpg", (32, 48, 3), "MM"), (".jpg", (32, 48), "II")])
def test_exif_orientation_is_applied(orientation, ext, shape, order):
    plain = encode(_asymmetric(shape), ext)
    tagged = with_orientation(plain, orientation, order=order)
    assert exif_orientation(tagged) == orientation and exif_orientation(plain) == 1
    stored = decode_image(plain)
    np.testing.assert_array_equal(decode_image(tagged), UPRIGHT[orientation](stored))
    np.testing.assert_array_equal(apply_orientation(stored, orientation), UPRIGHT[orientation](stored))
    if orientation >= 5:
        assert decode_image(tagged).shape[:2] == stored.shape[1::-1]


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_agrees_with_opencv_and_pillow(orientation):
    """Two outside readers of the tag: OpenCV's IMREAD_COLOR applies it to JPEGs, Pillow's exif_transpose to any file."""
    tagged = with_orientation(encode(_asymmetric((32, 48, 3)), ".jpg"), orientation)
    ours = decode_image(tagged)
    theirs = cv2.cvtColor(cv2.imdecode(np.frombuffer(tagged, np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    np.testing.assert_array_equal(ours, theirs)
    image = pytest.importorskip("PIL.Image")
    ops = pytest.importorskip("PIL.ImageOps")
    import io

    png = with_orientation(encode(_asymmetric((30, 44, 3)), ".png"), orientation)
    np.testing.assert_array_equal(decode_image(png), np.asarray(ops.exif_transpose(image.open(io.BytesIO(png)))))


def test_damaged_or_odd_exif_leaves_the_image_as_stored():
    plain = encode(_asymmetric((30, 44)), ".png")
    for orientation in (0, 9, 65535):
        assert exif_orientation(with_orientation(plain, orientation)) == 1
    jpeg = encode(_asymmetric((32, 48)), ".jpg")
    cut = jpeg[:2] + b"\xff\xe1\x00\x10Exif\0\0MM\x00" + jpeg[2:]  # a truncated TIFF block
    assert exif_orientation(cut) == 1
    with pytest.raises(ValueError, match="orientation=9 is invalid"):
        apply_orientation(np.zeros((2, 2), np.uint8), 9)


def test_a_rotated_exif_photo_gives_the_logits_of_the_physically_rotated_one(tmp_path):
    """Acceptance (issue 38): a phone photo stored sideways with orientation 6 is the upright photo."""
    import torch

    from infsa_viz import VisionTransformer, ViTConfig, prepare
    from infsa_viz.images import read_image

    torch.manual_seed(0)
    model = VisionTransformer(ViTConfig(img_size=48, embed_dim=16, depth=2, num_heads=2)).eval()
    upright = _asymmetric((60, 40))
    stored = np.rot90(upright, 1).copy()  # what the camera wrote: turned 90° anticlockwise
    (tmp_path / "photo.png").write_bytes(with_orientation(encode(stored, ".png"), 6))
    (tmp_path / "rotated.png").write_bytes(encode(upright, ".png"))
    with torch.no_grad():
        logits = [model(prepare(model, [read_image(tmp_path / name)]).tensor) for name in ("photo.png", "rotated.png")]
    torch.testing.assert_close(logits[0], logits[1], rtol=0, atol=0)
    assert not torch.equal(logits[1], model(prepare(model, [stored]).tensor).detach())
