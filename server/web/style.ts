import { STYLESHEET } from '../oidc/pages.ts';

/**
 * The pages' stylesheet: the sign-in provider's own (the same look as its login and consent
 * pages), and what these pages add: a header, wider pages, fieldsets, hints and field errors,
 * check boxes, cards and tables that fit a phone, a visible focus ring.
 */
export const PAGES_STYLESHEET = `${STYLESHEET}
header.site{display:flex;flex-wrap:wrap;gap:12px;justify-content:space-between;align-items:center;max-width:760px;margin:0 auto;padding:16px}
header.site .brand{font-weight:700;text-decoration:none;color:#1d2330}
header.site nav{display:flex;gap:16px;align-items:center}
main{margin:16px auto 48px}
main.wide{max-width:760px}
@media (max-width:480px){main{margin:0;border-left:0;border-right:0;border-radius:0;padding:20px}}
h2{font-size:18px;margin:0 0 12px}
section{border-top:1px solid #dde1e8;padding-top:20px;margin-top:28px}
fieldset{border:1px solid #dde1e8;border-radius:6px;margin:20px 0;padding:8px 16px 16px}
legend{font-weight:700;padding:0 6px}
input[type=text],input[type=url],input:not([type]){width:100%;padding:10px;border:1px solid #aab2c0;border-radius:4px;font-size:16px}
input[aria-invalid=true]{border-color:#8a1c12;border-width:2px}
:focus-visible{outline:3px solid #f2b400;outline-offset:2px}
.hint{color:#4a5262;font-size:14px;margin:2px 0 6px}
.optional{font-weight:400;color:#4a5262}
.field-error{color:#8a1c12;font-weight:600;margin:2px 0 6px}
.error h2{font-size:17px;margin:0 0 6px;color:#8a1c12}
.error ul{margin:0}
.error a{color:#8a1c12}
.notice{background:#e8f3ea;border:1px solid #b5d8bc;color:#1b4d26;padding:10px;border-radius:4px}
.request-id{font-size:14px;color:#4a5262}
.check{display:flex;gap:10px;align-items:center;margin-top:16px}
.check input{width:20px;height:20px}
.check label{margin:0;font-weight:600}
form.inline{display:inline;margin:0}
button.link{background:none;border:0;color:#1f4fbf;text-decoration:underline;padding:0;margin:0;font-size:16px}
.tag{display:inline-block;font-size:13px;background:#eef1f6;color:#2b3445;border-radius:10px;padding:0 8px}
ul.cards{list-style:none;padding:0}
.card{border:1px solid #dde1e8;border-radius:6px;padding:12px 16px;margin:12px 0}
.card-title{font-weight:700;margin:0 0 6px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0}
dt{color:#4a5262}
dd{margin:0;overflow-wrap:anywhere}
.table-wrap{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:15px}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid #dde1e8;vertical-align:top}
.toc ul{display:flex;flex-wrap:wrap;gap:4px 16px;list-style:none;padding:0}
.visually-hidden{position:absolute!important;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0}
code{background:#eef1f6;padding:1px 4px;border-radius:3px}
h3{font-size:16px;margin:24px 0 8px}
select{padding:8px;border:1px solid #aab2c0;border-radius:4px;font-size:16px;background:#fff;max-width:100%}
form.row{display:flex;flex-wrap:wrap;gap:8px 12px;align-items:center}
form.row label{margin:0}
.actions form{margin:0}
[hidden]{display:none!important}
ul.codes{list-style:none;padding:0;display:grid;grid-template-columns:repeat(auto-fill,minmax(130px,1fr));gap:8px}
ul.codes code,code.secret{font-size:17px;letter-spacing:1px}
code.secret{overflow-wrap:anywhere}
ol.steps{padding-left:20px}
`;
