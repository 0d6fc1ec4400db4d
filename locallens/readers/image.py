"""Images (`.png`, `.jpg`, `.tiff`): the text OCR reads in them (`locallens.readers.ocr`), each
frame of a multi-page TIFF cited as its page. Walked only when OCR is installed."""

from __future__ import annotations

import io
import warnings

from locallens.readers.base import Extracted, ReadSkip, TextBuilder, first_line, require
from locallens.readers.ocr import MAX_PIXELS, image_text

MAX_FRAMES = 500


def read(data: bytes, ext: str) -> Extracted:
    image_module = require("PIL.Image", "pillow")
    sequence = require("PIL.ImageSequence", "pillow")
    builder = TextBuilder()
    with warnings.catch_warnings():
        warnings.simplefilter("error", image_module.DecompressionBombWarning)
        try:
            image = image_module.open(io.BytesIO(data))
            width, height = image.size
            if width * height > MAX_PIXELS:
                raise ReadSkip(f"cannot OCR: image of {width}x{height} pixels is too large", error=True)
            for number, frame in enumerate(sequence.Iterator(image), start=1):
                if number > MAX_FRAMES:
                    break
                builder.begin("page", str(number))
                builder.add(image_text(frame))
        except ReadSkip:
            raise
        except (
            OSError,
            ValueError,
            SyntaxError,
            image_module.DecompressionBombWarning,
            image_module.DecompressionBombError,
        ) as exc:
            raise ReadSkip(f"cannot read image: {first_line(exc)}", error=True) from None
    extracted = builder.result()
    if not extracted.text:
        raise ReadSkip("no text found in the image (OCR)")
    return extracted
