"""Word lists of the TPC-H specification (section 4.2.2/4.2.3) used by the TPCH
generator, and the seeded text the comment columns are cut from."""

from __future__ import annotations

import random

REGIONS = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"]

NATIONS: list[tuple[str, int]] = [  # (name, region key), key = position
    ("ALGERIA", 0), ("ARGENTINA", 1), ("BRAZIL", 1), ("CANADA", 1), ("EGYPT", 4),
    ("ETHIOPIA", 0), ("FRANCE", 3), ("GERMANY", 3), ("INDIA", 2), ("INDONESIA", 2),
    ("IRAN", 4), ("IRAQ", 4), ("JAPAN", 2), ("JORDAN", 4), ("KENYA", 0),
    ("MOROCCO", 0), ("MOZAMBIQUE", 0), ("PERU", 1), ("CHINA", 2), ("ROMANIA", 3),
    ("SAUDI ARABIA", 4), ("VIETNAM", 2), ("RUSSIA", 3), ("UNITED KINGDOM", 3), ("UNITED STATES", 1),
]

PART_NAMES = (
    "almond antique aquamarine azure beige bisque black blanched blue blush brown burlywood "
    "burnished chartreuse chiffon chocolate coral cornflower cornsilk cream cyan dark deep dim "
    "dodger drab firebrick floral forest frosted gainsboro ghost goldenrod green grey honeydew "
    "hot indian ivory khaki lace lavender lawn lemon light lime linen magenta maroon medium "
    "metallic midnight mint misty moccasin navajo navy olive orange orchid pale papaya peach "
    "peru pink plum powder puff purple red rose rosy royal saddle salmon sandy seashell sienna "
    "sky slate smoke snow spring steel tan thistle tomato turquoise violet wheat white yellow"
).split()

TYPES = [
    ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"],
    ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"],
    ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"],
]

CONTAINERS = [
    ["SM", "LG", "MED", "JUMBO", "WRAP"],
    ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"],
]

SEGMENTS = ["AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"]
PRIORITIES = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
INSTRUCTIONS = ["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"]
MODES = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]

_NOUNS = ("foxes ideas theodolites pinto beans instructions dependencies excuses platelets "
          "asymptotes courts dolphins multipliers sauternes warthogs frets dinos attainments "
          "somas Tiresias patterns forges braids hockey players frays warhorses dugouts notornis "
          "epitaphs pearls tithes waters orbits gifts sheaves depths sentiments decoys realms "
          "pains grouches escapades packages requests accounts deposits").split()
_VERBS = ("sleep wake are cajole haggle nag use boost affix detect integrate maintain nod was "
          "lose sublate solve thrash promise engage hinder print x-ray breach eat grow impress "
          "mold poach serve run dazzle snooze doze unwind kindle play hang believe").split()
_ADJECTIVES = ("furious sly careful blithe quick fluffy slow quiet ruthless thin close dogged "
               "daring brave stealthy permanent enticing idle busy regular final ironic even "
               "bold silent pending special express unusual").split()
_ADVERBS = ("sometimes always never furiously slyly carefully blithely quickly fluffily slowly "
            "quietly ruthlessly thinly closely doggedly daringly bravely stealthily permanently "
            "enticingly idly busily regularly finally ironically evenly boldly silently").split()


def text_pool(r: random.Random, words: int = 60_000) -> str:
    """A seeded soup of TPC-H grammar words; comment columns are slices of it."""
    out: list[str] = []
    for _ in range(words // 5):
        out.append(r.choice(_ADVERBS))
        out.append(r.choice(_ADJECTIVES))
        out.append(r.choice(_NOUNS))
        out.append(r.choice(_VERBS))
        out.append(r.choice(_ADVERBS) + r.choice(".,;!? "))
    return " ".join(out)
