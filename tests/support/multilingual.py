"""The multilingual sanity set: short passages in several scripts and the keyword queries each must
(or must not) match through the lexical leg, whichever index adapter or layer runs it."""

from __future__ import annotations

from typing import NamedTuple


class Passage(NamedTuple):
    key: str
    title: str
    text: str


class Probe(NamedTuple):
    query: str
    expected: frozenset[str]
    """Keys of the passages the lexical leg must return, and no others."""


PASSAGES = (
    Passage("zh_hybrid", "检索", "混合检索结合关键词检索和向量检索。"),
    Passage("zh_backup", "运维", "每天凌晨自动备份数据库，保留三十天。"),
    Passage("ja_tokyo", "天気", "東京タワーは雨の日も営業しています。"),
    Passage("ko_seoul", "날씨", "서울의 날씨는 맑습니다."),
    Passage("fr_cafe", "Menu", "Un café au lait à Paris, près du Musée."),
    Passage("de_street", "Adresse", "Die Hauptstraße führt zum Rathaus."),
    Passage("da_town", "Rejse", "Færgen sejler til Ærøskøbing hver morgen."),
    Passage("en_wide", "Gateway", "Ｔｈｅ ＡＰＩ gateway routes requests."),
    Passage("en_plain", "Plain", "Plain English text about coffee and trains."),
)

PROBES = (
    Probe("混合检索", frozenset({"zh_hybrid"})),
    Probe("备份", frozenset({"zh_backup"})),
    Probe("東京", frozenset({"ja_tokyo"})),
    Probe("京都", frozenset()),
    Probe("タワー", frozenset({"ja_tokyo"})),
    Probe("雨", frozenset({"ja_tokyo"})),  # a single CJK character matches indexed unigrams
    Probe("서울", frozenset({"ko_seoul"})),  # Hangul is indexed as bigrams
    Probe("cafe", frozenset({"fr_cafe"})),
    Probe("CAFÉ", frozenset({"fr_cafe"})),
    Probe("musee", frozenset({"fr_cafe"})),
    Probe("hauptstrasse", frozenset({"de_street"})),
    Probe("aeroskobing", frozenset({"da_town"})),
    Probe("api", frozenset({"en_wide"})),
    Probe("trains", frozenset({"en_plain"})),
)
