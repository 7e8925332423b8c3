#!/usr/bin/env python3
"""COMPAS and Adult for the binary BNN (Tables 2 and 4), preprocessed as the official code.

Re-states ruqizhang/discrete-langevin BinaryBNN/{compas,adult}_loader.py and the data part of
bayesian_nn.py (spec reproduction.md §3.6) with the standard library and numpy only (pandas is
not installed here): ProPublica row filters (COMPAS) or rows with "?" removed (Adult), label
encoding in the loaders' orders, numpy's legacy shuffle with seed 78712 (the same permutation
as the official code), min-max scaling over train+test, one-hot of the categorical columns
with max+1 columns, the last 1% of the training rows held out, and z-scoring with the
training mean and (n−1) standard deviation. The official code z-scores in float32 on the
GPU; this script does it in float64, so features agree to about 1e-7.

Usage: prep_bnn.py compas|adult SRC_DIR OUT_DIR  (writes OUT_DIR/<name>-{train,test}.csv,
features then target per row, and OUT_DIR/<name>.json, a dlp.model.v1 bnn model, H = 100).
"""
import csv
import json
import os
import sys

import numpy as np


def minmax(col):
    return (col - col.min()) / (col.max() - col.min())


def one_hot(col):
    out = np.zeros((col.shape[0], int(col.max()) + 1))
    out[np.arange(col.shape[0]), col.astype(int)] = 1.0
    return out


def normalize(train, test, class_list, mono_list):
    """normalize_data_ours: mono columns first, then the other numeric ones, then one-hots."""
    feat = np.concatenate((train, test), axis=0)
    cols = [minmax(feat[:, i]) for i in mono_list]
    cols += [minmax(feat[:, i]) for i in range(feat.shape[1]) if i not in mono_list and i not in class_list]
    out = np.column_stack(cols)
    for i in range(feat.shape[1]):
        if i in class_list:
            out = np.concatenate((out, one_hot(feat[:, i])), axis=1)
    return out[: train.shape[0]], out[train.shape[0]:]


def compas(src):
    with open(os.path.join(src, "compas-scores-two-years.csv"), newline="") as f:
        rows = list(csv.reader(f))
    head = rows[0]
    col = {}
    for i, name in enumerate(head):
        col.setdefault(name, i)  # pandas keeps the first of duplicated names unsuffixed

    def num(r, name):
        v = r[col[name]]
        return float(v) if v != "" else float("nan")

    keep = []
    for r in rows[1:]:
        d = num(r, "days_b_screening_arrest")
        # NaN fails both comparisons (pandas); "N/A" score_text is read as NaN, which
        # is != 'N/A', so the official score_text filter keeps every row.
        if not (d <= 30 and d >= -30):
            continue
        if num(r, "is_recid") == -1:
            continue
        if not (r[col["c_charge_degree"]] != "" and r[col["c_charge_degree"]] <= "O"):
            continue
        keep.append(r)
    race = ["African-American", "Hispanic", "Asian", "Caucasian", "Native American", "Other"]
    sex = ["Male", "Female"]
    names = ["priors_count", "juv_fel_count", "juv_misd_count", "juv_other_count", "age"]
    data = np.array(
        [[int(r[col[n]]) for n in names] + [race.index(r[col["race"]]), sex.index(r[col["sex"]]),
                                            int(r[col["two_year_recid"]])] for r in keep]
    )
    n = data.shape[0]
    n_train = int(n * 0.8)
    np.random.seed(seed=78712)
    np.random.shuffle(data)
    train, test = data[:n_train], data[n_train:]
    xtr, xte = normalize(train[:, :7].astype(np.float64), test[:, :7].astype(np.float64), [5, 6], [0, 1, 2, 3])
    return xtr, train[:, 7].astype(np.float64), xte, test[:, 7].astype(np.float64), n


ADULT_LISTS = [
    ['Private', 'Self-emp-not-inc', 'Self-emp-inc', 'Federal-gov', 'Local-gov', 'State-gov', 'Without-pay',
     'Never-worked'],
    ['Bachelors', 'Some-college', '11th', 'HS-grad', 'Prof-school', 'Assoc-acdm', 'Assoc-voc', '9th', '7th-8th',
     '12th', 'Masters', '1st-4th', '10th', 'Doctorate', '5th-6th', 'Preschool'],
    ['Married-civ-spouse', 'Divorced', 'Never-married', 'Separated', 'Widowed', 'Married-spouse-absent',
     'Married-AF-spouse'],
    ['Tech-support', 'Craft-repair', 'Other-service', 'Sales', 'Exec-managerial', 'Prof-specialty',
     'Handlers-cleaners', 'Machine-op-inspct', 'Adm-clerical', 'Farming-fishing', 'Transport-moving',
     'Priv-house-serv', 'Protective-serv', 'Armed-Forces'],
    ['Wife', 'Own-child', 'Husband', 'Not-in-family', 'Other-relative', 'Unmarried'],
    ['White', 'Asian-Pac-Islander', 'Amer-Indian-Eskimo', 'Other', 'Black'],
    ['Female', 'Male'],
    ['United-States', 'Cambodia', 'England', 'Puerto-Rico', 'Canada', 'Germany', 'Outlying-US(Guam-USVI-etc)',
     'India', 'Japan', 'Greece', 'South', 'China', 'Cuba', 'Iran', 'Honduras', 'Philippines', 'Italy', 'Poland',
     'Jamaica', 'Vietnam', 'Mexico', 'Portugal', 'Ireland', 'France', 'Dominican-Republic', 'Laos', 'Ecuador',
     'Taiwan', 'Haiti', 'Columbia', 'Hungary', 'Guatemala', 'Nicaragua', 'Scotland', 'Thailand', 'Yugoslavia',
     'El-Salvador', 'Trinadad&Tobago', 'Peru', 'Hong', 'Holand-Netherlands'],
]


def adult_rows(path, skip, labels):
    codes = {}
    for lst in ADULT_LISTS + [labels]:
        for i, s in enumerate(lst):
            codes.setdefault(s, i)
    out = []
    with open(path, newline="") as f:
        for k, r in enumerate(csv.reader(f)):
            if k < skip or not r or all(c.strip() == "" for c in r):
                continue
            r = [c.strip() for c in r]
            if "?" in r:
                continue
            del r[3]  # education (string) dropped; education-num kept
            out.append([float(codes[c]) if c in codes else float(c) for c in r])
    return np.array(out)


def adult(src):
    train = adult_rows(os.path.join(src, "adult.data"), 0, ['<=50K', '>50K'])
    test = adult_rows(os.path.join(src, "adult.test"), 1, ['<=50K.', '>50K.'])
    np.random.seed(seed=78712)
    np.random.shuffle(train)
    xtr, xte = normalize(train[:, :13], test[:, :13], [1, 4, 5, 6, 7, 8, 12], [3, 9, 11])
    return xtr, train[:, 13], xte, test[:, 13], train.shape[0] + test.shape[0]


def main():
    name, src, out = sys.argv[1:4]
    xtr, ytr, xte, yte, n_rows = {"compas": compas, "adult": adult}[name](src)
    n_train = xtr.shape[0]
    n = int(0.99 * n_train)  # the last 1% of the training rows are held out (unused)
    xtr, ytr = xtr[:n], ytr[:n]
    mean, std = xtr.mean(axis=0), xtr.std(axis=0, ddof=1)
    const = np.where(std == 0)[0]
    if const.size:
        # The official code would divide by 0 here (NaN features); we centre the column only.
        print(f"warning: constant training columns {const.tolist()} are centred, not scaled", file=sys.stderr)
        std[const] = 1.0
    xtr, xte = (xtr - mean) / std, (xte - mean) / std
    os.makedirs(out, exist_ok=True)
    for part, x, y in (("train", xtr, ytr), ("test", xte, yte)):
        with open(os.path.join(out, f"{name}-{part}.csv"), "w") as f:
            f.write(",".join([f"x{i}" for i in range(x.shape[1])] + ["y"]) + "\n")
            for row, t in zip(x, y):
                f.write(",".join(repr(float(v)) for v in row) + f",{int(t)}\n")
    p, h = xtr.shape[1], 100
    model = {"schema": "dlp.model.v1", "kind": "bnn",
             "name": f"binary BNN on {name} (official preprocessing, {n} training rows, p = {p}), H = {h}, tau = 100",
             "d": (p + 2) * h + 1, "domain": "binary", "hidden": h, "tau": 100.0, "data": f"{name}-train.csv"}
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump(model, f, indent=2)
        f.write("\n")
    print(f"{name}: {n_rows} rows after filters; train {xtr.shape[0]} x {p} (+{n_train - n} held out),"
          f" test {xte.shape[0]}; mean y train {ytr.mean():.4f} test {yte.mean():.4f}")


if __name__ == "__main__":
    main()
