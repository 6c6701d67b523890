"""Pick the Explore tab's examples: one CIFAR-10 test image per class.

    python examples/cifar10/pick.py [path/to/cifar10-jpeg.tar.gz]

Rule: for each class, the test image with the lowest file name in test/<class>/ of the
archive (default: ../shared/data/cifar10-jpeg.tar.gz beside the repository). The JPEG bytes
are copied unchanged to examples/cifar10/<class>.jpg (32x32, about 1 kB each).
"""

from __future__ import annotations

import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_ARCHIVE = HERE.parents[2] / "shared" / "data" / "cifar10-jpeg.tar.gz"


def first_test_images(archive: tarfile.TarFile) -> dict[str, tarfile.TarInfo]:
    """{class: member} with the lowest file name under test/<class>/."""
    first: dict[str, tarfile.TarInfo] = {}
    for member in archive.getmembers():
        parts = member.name.split("/")[-3:]
        if member.isfile() and len(parts) == 3 and parts[0] == "test":
            name = parts[1]
            if name not in first or Path(member.name).name < Path(first[name].name).name:
                first[name] = member
    return first


def main(argv: list[str]) -> None:
    path = Path(argv[0]) if argv else DEFAULT_ARCHIVE
    if not path.is_file():
        sys.exit(f"{path}: no such archive (pass the path to cifar10-jpeg.tar.gz)")
    with tarfile.open(path) as archive:
        for name, member in sorted(first_test_images(archive).items()):
            (HERE / f"{name}.jpg").write_bytes(archive.extractfile(member).read())
            print(f"{name}: {member.name}")


if __name__ == "__main__":
    main(sys.argv[1:])
