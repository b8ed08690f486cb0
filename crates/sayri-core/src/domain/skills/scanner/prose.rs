//! Prose aimed at the agent: instruction overrides, claimed approval, deception, install-time
//! instructions, requests to send data somewhere, and text hidden from human readers (HTML
//! comments, invisible markup). Phrases are matched in English, Spanish, French, German,
//! Portuguese, Italian, Russian, Chinese and Japanese, on normalised text (so zero-width
//! characters and look-alike letters do not hide them). Every text file is read as prose too:
//! a comment in a script speaks to the model just as well.

use super::{Collector, FileRole, Kind, Labels};
use crate::static_regex::{static_regex, static_regex_set};
use regex::{Regex, RegexSet};
use std::sync::OnceLock;

/// One phrase rule.
struct Phrase {
    kind: Kind,
    pattern: &'static str,
    detail: &'static str,
}

const PHRASES: &[Phrase] = &[
    // Instruction overrides.
    Phrase {
        kind: Kind::PromptOverride,
        pattern: r"\b(ignore|disregard|forget|override|bypass|drop|abandon|discard)\b.{0,40}\b(previous|prior|earlier|above|preceding|all|any|every|your|system|safety|original|existing|former)\b.{0,40}\b(instructions?|guidance|rules?|directives?|prompts?|guidelines?|polic(y|ies)|constraints?|restrictions?|programming|context)\b",
        detail: "asks the agent to drop its instructions",
    },
    Phrase {
        kind: Kind::PromptOverride,
        pattern: r"\b(new|updated|real|true)\s+(priority\s+)?(directive|system\s+prompt|instructions?\s+from\s+(the\s+)?(system|developer|admin))|\byou\s+are\s+now\s+(a|an|in|the)\b|\b(developer|god|jailbreak|dan)\s+mode\b|\bsystem\s+override\b|\b(disable|turn\s+off|deactivate)\s+(your\s+)?(safety|guardrails?|filters?|restrictions?)|\bact\s+as\s+(a|an)\s+[\w\s-]{0,30}\b(bot|agent)\b.{0,40}\b(collect|exfiltrat|harvest|steal)",
        detail: "tries to give the agent a new role or priority",
    },
    Phrase {
        kind: Kind::PromptOverride,
        pattern: r"\b(ignora|olvida|omite|descarta)(r|d)?\b.{0,30}\b(instrucciones|reglas|indicaciones|directrices)\b|\b(ignore[rz]?|oublie[rz]?)\b.{0,30}\b(instructions|consignes|règles|directives)\b|\b(ignorier\w*|vergiss|vergessen\s+sie)\b.{0,40}\b(anweisungen|regeln|instruktionen|vorgaben)\b|\b(ignore|esqueça|esqueca|desconsidere)\b.{0,30}\b(instruções|instrucoes|regras)\b|\b(ignora|dimentica)\b.{0,30}\b(istruzioni|regole)\b|(игнорируй|забудь|проигнорируй|игнорировать)\w*.{0,40}(инструкци|правил|указани)|(忽略|无视|忘记|忘掉|不要理会).{0,10}(之前|以上|先前|所有|全部|上述).{0,10}(指令|指示|说明|规则|提示)|(以前|前|上記)の(指示|命令|ルール).{0,6}(無視|忘れ)",
        detail: "asks the agent to drop its instructions (not in English)",
    },
    // Claimed approval / no confirmation.
    Phrase {
        kind: Kind::PreApproval,
        pattern: r"\balready\s+(been\s+)?(approved|authori[sz]ed|confirmed|allowed|whitelisted)|\bpre-?(approved|authori[sz]ed)\b|\b(skip|bypass|omit|no\s+need\s+for|without\s+any|don'?t\s+need|do\s+not\s+need)\s+(any\s+|the\s+|all\s+|user\s+)?(confirmations?|approvals?|permissions?|prompts?)\b|\bwithout\s+(asking|confirmation|approval|permission|prompting|confirming|checking\s+with)\b|\b(do\s+not|don'?t|never)\s+(ask|prompt|check\s+with|bother)\s+(the\s+)?(user|owner|human|them|for\s+(confirmation|permission|approval))|\bauto-?(approve|confirm)\b|\b(has|have)\s+(given|granted)\s+(you\s+)?(full\s+|blanket\s+)?(permission|approval|consent)\b|\bsilently\s+(run|execute|install)",
        detail: "claims approval or tells the agent not to ask",
    },
    Phrase {
        kind: Kind::PreApproval,
        pattern: r"\bsin\s+(preguntar|pedir\s+(permiso|confirmaci[oó]n)|confirmaci[oó]n|avisar)|\bya\s+(est[aá]n?|fue|fueron|han\s+sido)\s+(aprobad|autorizad)|\bno\s+(le\s+)?(preguntes|pidas\s+(permiso|confirmaci))|\bsans\s+(demander|confirmation|autorisation|permission)|\bd[ée]j[àa]\s+(approuv|autoris)|\bne\s+(demande|demandez)\s+pas\b|\bohne\s+(zu\s+fragen|nachzufragen|r[üu]ckfrage|best[äa]tigung|erlaubnis)|\bbereits\s+(genehmigt|freigegeben|best[äa]tigt|erlaubt)|\bfrag\w*\s+(den\s+(benutzer|nutzer)\s+)?nicht\b|\bsem\s+(perguntar|confirma[çc][ãa]o|pedir)|\bsenza\s+(chiedere|conferma)|\bgi[àa]\s+(approvat|autorizzat)|без\s+(подтвержд|спрос|вопрос|разрешени)|не\s+спрашива|уже\s+(одобрен|разрешен)|(无需|不用|不必|无须)(确认|询问|批准|许可)|不要(询问|征求)|已(经)?(获得)?(批准|授权)|確認(せず|なしで)|許可(なく|なしで)",
        detail: "claims approval or tells the agent not to ask (not in English)",
    },
    // Deception.
    Phrase {
        kind: Kind::Deception,
        pattern: r"\b(do\s+not|don'?t|never|must\s+not)\s+(tell|inform|show|mention|reveal|disclose|bring\s+up|let\s+on|notify|alert)\b.{0,40}\b(user|owner|human|anyone|them|person)|\b(never|do\s+not|don'?t)\s+(mention|reveal|disclose|bring\s+up)\b|\b(keep|remain)\s+(this|it|that)\s+(a\s+)?(secret|hidden|quiet|confidential)\b|\btell\s+the\s+user\s+(that\s+)?(the\s+skill|it|this)\s+only\b|\b(hide|conceal)\s+(this|that|it|the)\b.{0,20}\b(step|command|request|from)|\bwithout\s+(the\s+user|them|anyone)\s+(knowing|noticing|seeing)|\b(lie|pretend)\s+(to|that)\b|\bmisstate\b",
        detail: "tells the agent to hide or misstate what it does",
    },
    Phrase {
        kind: Kind::Deception,
        pattern: r"\bno\s+(le\s+)?(digas|menciones|cuentes|informes|muestres)\b|\bnunca\s+(menciones|digas|reveles)|\bsin\s+que\s+el\s+usuario\s+(lo\s+)?sepa|\bne\s+(dis|dites|mentionne|mentionnez|r[ée]v[èe]le|montre)\s+(rien|pas|jamais)|\bsans\s+que\s+l'utilisateur|\b(sag|erw[äa]hn|verrat|zeig)\w*\b.{0,30}\bnicht\b.{0,20}(benutzer|nutzer)?|\bverheimlich|\bohne\s+dass\s+der\s+(benutzer|nutzer)|\bn[ãa]o\s+(conte|diga|mencione)\b|\bnon\s+(dire|menzionare|rivelare)\b|не\s+(говори|сообщай|рассказывай|упоминай|показывай)|скрой|不要(告诉|通知|提及|透露|显示给)|对用户(隐瞒|保密)|(ユーザー|利用者)に(言わ|伝え|知らせ)(ない|ず)",
        detail: "tells the agent to hide what it does (not in English)",
    },
    // Install-time instructions.
    Phrase {
        kind: Kind::InstallInstruction,
        pattern: r"\bprerequisites?\b|\bbefore\s+(the\s+)?(first\s+)?(use|using|running|you\s+(start|begin|use))|\b(first|firstly),?\s+(run|install|execute)\b|\brun\s+(the\s+|this\s+)?(installer|setup\s+(script|command)|bootstrap|following\s+(command|script|once))|\b(runtime|installer|dependency|setup)\s+(is\s+)?required\b|\brequired\s+runtime\b|\bone-?time\s+setup\b|\bwill\s+not\s+work\s+until\b|\bantes\s+de\s+(usar|empezar|utilizar)|\bprimero\s+(ejecuta|instala|corre)|\brequisitos?\s+previos?|\bpr[ée]requis\b|\bavant\s+(d'utiliser|de\s+commencer)|\bex[ée]cute[rz]?\s+d'abord|\bvoraussetzung|\bzuerst\s+\w*\s*(ausf[üu]hren|installieren)|\bf[üu]hre\b.{0,40}\baus\b|\bprimeiro\s+(execute|instale)|\bprima\s+(esegui|installa)|сначала\s+(выполни|запусти|установи)|先(运行|执行|安装)|首先(运行|执行|安装)|前置条件|最初に(実行|インストール)",
        detail: "an instruction to run something before the skill is used",
    },
    // Prose asking to send data somewhere.
    Phrase {
        kind: Kind::ProseExfiltration,
        pattern: r"\b(send|upload|post|transmit|exfiltrate|forward|copy|sync|mail|e-?mail|deliver|push|env[ií]a|sube|envoie|sende|lade|envie|invia)\b.{0,120}\b(files?|home\s+(folder|directory)|credentials?|keys?|secrets?|tokens?|passwords?|history|memory|config|cookies?|\.env|ssh|documents?|conversations?|sessions?|archivos|fichiers|dateien|arquivos)\b.{0,80}(https?://|\b\S+@\S+\.[a-z]{2,}\b|\b\d{1,3}(\.\d{1,3}){3}\b)|\b(files?|home\s+(folder|directory)|credentials?|keys?|secrets?|tokens?|passwords?|history|config|documents?)\b.{0,80}\b(send|upload|post|transmit|exfiltrate|forward)\b.{0,40}\b(to|into)\s+(https?://|\S+@)|(发送|上传|отправ\w*|загруз\w*).{0,60}(https?://)",
        detail: "asks for the user's data to be sent to an address",
    },
];

/// Words that make an HTML comment an instruction rather than a note.
const COMMENT_VOCABULARY: &str = r"\b(assistant|agent|ai|model|llm|claude|gpt|run|execute|curl|wget|bash|sh|ignore|approve[sd]?|user|owner|never|always|must|instructions?|step|secret|token|password|ssh|send|upload|cat|rm|sudo|append|hide|mention|note\s+for)\b";

/// Markup that hides text when rendered.
const HIDDEN_MARKUP: &str = r#"(?i)display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(px|pt|em)?\b|color\s*:\s*(white|#fff(fff)?)\b|^\s*\[//\]\s*:\s*#|^\s*\[comment\]\s*:\s*#|<\s*\w+[^>]*\bhidden\b[^>]*>"#;

struct Compiled {
    set: RegexSet,
    each: Vec<Regex>,
    comment_words: Regex,
    hidden_markup: Regex,
}

fn compiled() -> &'static Compiled {
    static C: OnceLock<Compiled> = OnceLock::new();
    C.get_or_init(|| {
        let pats: Vec<String> = PHRASES
            .iter()
            .map(|p| format!("(?i){}", p.pattern))
            .collect();
        Compiled {
            set: static_regex_set(&pats),
            each: pats.iter().map(|p| static_regex(p)).collect(),
            comment_words: static_regex(&format!("(?i){COMMENT_VOCABULARY}")),
            hidden_markup: static_regex(HIDDEN_MARKUP),
        }
    })
}

/// Scans normalised `lines` as prose.
pub fn scan(labels: &Labels<'_>, lines: &[String], role: FileRole, c: &mut Collector) {
    let re = compiled();
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        for k in re.set.matches(line).iter() {
            let p = &PHRASES[k];
            if p.kind == Kind::InstallInstruction && role != FileRole::Prose {
                continue;
            }
            let m = re.each[k].find(line).map(|m| m.as_str()).unwrap_or(line);
            c.add(
                p.kind,
                labels.path,
                n,
                line,
                &labels.detail(
                    n,
                    &format!("{}: \"{}\"", p.detail, super::hidden::excerpt(m, 100)),
                ),
            );
        }
        if role == FileRole::Prose && re.hidden_markup.is_match(line) {
            c.add(
                Kind::HiddenText,
                labels.path,
                n,
                line,
                "markup that hides this text from a person reading the rendered page",
            );
        }
    }
    if role == FileRole::Prose {
        html_comments(labels, lines, c);
    }
}

/// HTML comments that speak to the agent (invisible once the Markdown is rendered).
fn html_comments(labels: &Labels<'_>, lines: &[String], c: &mut Collector) {
    let re = compiled();
    let text = lines.join("\n");
    let mut from = 0;
    while let Some(start) = text[from..].find("<!--").map(|s| s + from) {
        let (body_end, end) = match text[start + 4..].find("-->") {
            Some(e) => (start + 4 + e, start + 4 + e + 3),
            None => (text.len(), text.len()),
        };
        let body = &text[start + 4..body_end];
        let line = text[..start].matches('\n').count() + 1;
        if re.comment_words.is_match(body) {
            c.add(
                Kind::HiddenText,
                labels.path,
                line,
                body,
                &labels.detail(
                    line,
                    "an HTML comment (invisible when the Markdown is rendered) gives instructions",
                ),
            );
        }
        from = end;
    }
}
